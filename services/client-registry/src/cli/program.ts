// mds-admin: the admin APIs from a terminal (commander: help on every command, suggestions, usage on errors).
// Exit codes: 0 done (and for --help, --version), 1 the service refused or could not be reached, 2 usage.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { AdminApiError, ENVIRONMENT_HELP, SetupError } from './admin-api.js';
import { commands } from './commands/index.js';
import { CliContext, type CliIo } from './context.js';

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

function version(): string {
  const manifest = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

export function buildProgram(cli: CliContext): Command {
  const program = new Command('mds-admin')
    .description(
      'Operate the messenger delivery service: companies, API keys, webhooks, bots, clients, dashboard members.',
    )
    .version(version(), '-V, --version', "print mds-admin's version")
    .helpOption('-h, --help', 'show help for a command')
    .helpCommand('help [command]', 'show help for a command')
    .option('--json', 'print the API answer as JSON, for scripts (human-readable text otherwise)')
    .exitOverride()
    .showHelpAfterError(true)
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (text) => void cli.io.stdout.write(text),
      writeErr: (text) => void cli.io.stderr.write(text),
    })
    .addHelpText(
      'after',
      `\n${ENVIRONMENT_HELP}\n\nExit codes: 0 done, 1 the service refused or could not be reached, 2 usage error.`,
    )
    .hook('preAction', (_program, action) => {
      cli.json = Boolean(action.optsWithGlobals<{ json?: boolean }>().json);
    });
  for (const add of commands) add(program, cli);
  return program;
}

/** Runs mds-admin with these arguments (without node and the script); resolves to the exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const cli = new CliContext(io);
  try {
    await buildProgram(cli).parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    // commander has printed its message (and usage) already; --help and --version end here with 0.
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (error instanceof SetupError) {
      io.stderr.write(`mds-admin: ${error.message}\n`);
      return EXIT.usage;
    }
    if (error instanceof AdminApiError) {
      if (cli.json && error.problem !== undefined)
        io.stderr.write(`${JSON.stringify(error.problem, null, 2)}\n`);
      else io.stderr.write(`mds-admin: ${error.message}\n`);
      return EXIT.failed;
    }
    throw error;
  }
}

/** The bin's entry: the process's arguments and streams, and its exit code. */
export async function main(): Promise<void> {
  process.exitCode = await runCli(process.argv.slice(2), {
    env: process.env,
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
  });
}
