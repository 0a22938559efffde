#!/usr/bin/env node
// mds-replay: export the event log as typed tables for analysts, query them, rebuild read models, or
// summarise, from the log. Reads the topics from the beginning (or --from, or where the last export
// stopped) to where they end when it starts. See docs/replay.md.
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import { addExportCommand } from './cli/export-command.js';
import { addQueryCommand } from './cli/query-command.js';
import { addRebuildCommand } from './cli/rebuild-command.js';
import { Failure, type Io } from './cli/shared.js';
import { addSummaryCommand } from './cli/summary-command.js';

const here = dirname(fileURLToPath(import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(here, '../package.json'), 'utf8')) as { version: string })
  .version;

export function program(io: Io): Command {
  const root = new Command('mds-replay')
    .description('Export the event log as typed tables, query them, rebuild read models, or summarise.')
    .version(VERSION, '-V, --version')
    .showSuggestionAfterError(true)
    .showHelpAfterError('(run mds-replay --help for usage)')
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride()
    .addHelpText(
      'after',
      `
environment: KAFKA_BROKERS (required), KAFKA_TOPIC_PREFIX, KAFKA_SSL, KAFKA_SASL_*; DATABASE_URL for rebuild
docs: docs/replay.md`,
    );

  addExportCommand(root, io);
  addQueryCommand(root, io);
  addRebuildCommand(root, io);
  addSummaryCommand(root, io);
  return root;
}

/** Runs mds-replay; returns the exit code (0 ok and help, 1 failed, 2 usage). */
export async function run(
  argv: string[],
  io: Io = {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    env: process.env,
    tty: Boolean(process.stderr.isTTY),
  },
): Promise<number> {
  const cli = program(io);
  if (argv.length === 0) {
    io.err(cli.helpInformation());
    return 2;
  }
  try {
    await cli.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.code === 'commander.help'
      )
        return 0;
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof Failure) {
      io.err(`mds-replay: ${error.message}\n`);
      if (error.exitCode === 2) io.err('(run mds-replay <command> --help for usage)\n');
      return error.exitCode;
    }
    io.err(`mds-replay: ${(error as Error).message}\n`);
    return 1;
  }
}

// Run when executed (not when imported by tests), also through a symlink (npx, node_modules/.bin).
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  process.exitCode = await run(process.argv.slice(2));
}
