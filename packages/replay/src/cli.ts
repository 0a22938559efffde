#!/usr/bin/env node
// mds-replay: export the event log as typed tables for analysts, query them, rebuild read models, or
// summarise, from the log. Reads the topics from the beginning (or --from, or where the last export
// stopped) to where they end when it starts. See docs/replay.md.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import type { TopicKey } from '@mds/contracts';
import { kafkaEnv, loadConfig, z } from '@mds/config';
import { kafkaSettingsFromEnv, type KafkaSettings } from '@mds/kafka';
import { exportLog, STREAMS, type ExportFormat } from './export.js';
import { formatResult, queryExport, REPORTS, type OutputFormat } from './query.js';
import { formatSummary, rebuildEventStates, summaryOf, type ReplayOptions } from './replay.js';

const here = dirname(fileURLToPath(import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(here, '../package.json'), 'utf8')) as { version: string })
  .version;

const envSchema = z.object({ ...kafkaEnv, DATABASE_URL: z.string().optional() });

interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** stderr is a terminal (progress bars only then) */
  tty: boolean;
}

class Failure extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

function isoTime(value: string): Date {
  const parsed = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(parsed.getTime()))
    throw new InvalidArgumentError('expected an ISO 8601 time, e.g. 2026-01-31T00:00:00Z');
  return parsed;
}

function threadCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 64) throw new InvalidArgumentError('expected a whole number 0-64');
  return n;
}

function streamList(value: string): TopicKey[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) throw new InvalidArgumentError('expected stream names');
  if (names.includes('all')) return Object.values(STREAMS);
  return names.map((name) => {
    const key = STREAMS[name];
    if (!key)
      throw new InvalidArgumentError(
        `unknown stream "${name}" (streams: ${Object.keys(STREAMS).join(', ')}, all)`,
      );
    return key;
  });
}

interface ReadFlags {
  from?: Date;
  to?: Date;
  company?: string;
  threads?: number;
  progress: boolean;
  json?: boolean;
}

const readOptions = (c: Command) =>
  c
    .option('--from <time>', 'start at the first event recorded at or after this ISO time', isoTime)
    .option('--to <time>', 'only events that occurred before this ISO time', isoTime)
    .option('--company <id>', "only this company's events")
    .option(
      '--threads <n>',
      'worker threads reading and decoding (default: one per core; 0: none)',
      threadCount,
    )
    .option('--no-progress', 'no progress bar (it goes to stderr, and only to a terminal)')
    .option('--json', 'print the result as JSON (for scripts)');

function kafkaSettings(io: Io): { settings: KafkaSettings; databaseUrl?: string } {
  let config: z.infer<typeof envSchema>;
  try {
    config = loadConfig(envSchema, io.env);
  } catch (error) {
    throw new Failure(`the environment: ${(error as Error).message}`, 2);
  }
  return {
    settings: kafkaSettingsFromEnv(config, 'mds-replay'),
    ...(config.DATABASE_URL ? { databaseUrl: config.DATABASE_URL } : {}),
  };
}

function replayOptions(io: Io, flags: ReadFlags, settings: KafkaSettings): ReplayOptions {
  if (flags.from && flags.to && flags.to <= flags.from) throw new Failure('--to must be after --from', 2);
  const bar =
    flags.progress && io.tty
      ? new SingleBar(
          {
            format: '{bar} {percentage}% | {value}/{total} events | {eta_formatted} left',
            stream: process.stderr,
          },
          Presets.shades_classic,
        )
      : undefined;
  let started = false;
  return {
    settings,
    ...(flags.from ? { from: flags.from } : {}),
    ...(flags.to ? { to: flags.to } : {}),
    ...(flags.company ? { companyId: flags.company } : {}),
    ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
    onProgress: (done, total) => {
      if (!bar) return;
      if (!started) bar.start(total, 0);
      started = true;
      bar.update(done);
      if (done >= total) bar.stop();
    },
    onTrimmed: (partitions) =>
      io.err(
        `mds-replay: warning: retention has deleted the oldest events of ${partitions.join(', ')}; states are folded from what is left\n`,
      ),
  };
}

/** Finds client-registry's rebuild bin: MDS_REGISTRY_REBUILD_BIN, an installed workspace bin, or PATH. */
function registryRebuildBin(env: NodeJS.ProcessEnv): string {
  if (env.MDS_REGISTRY_REBUILD_BIN) return env.MDS_REGISTRY_REBUILD_BIN;
  for (let dir = here; dir !== dirname(dir); dir = dirname(dir)) {
    const bin = join(dir, 'node_modules/.bin/mds-registry-rebuild');
    if (existsSync(bin)) return bin;
  }
  return 'mds-registry-rebuild';
}

function spawnRebuild(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (error) =>
      reject(
        new Failure(
          `cannot run client-registry's rebuild (${bin}): ${error.message}; install @mds/client-registry or set MDS_REGISTRY_REBUILD_BIN`,
        ),
      ),
    );
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

const printJson = (io: Io, value: unknown) => io.out(`${JSON.stringify(value, null, 2)}\n`);

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

  readOptions(
    root
      .command('export')
      .description(
        'write the streams as typed tables (Parquet partitioned by day, CSV) plus the folded tables',
      )
      .requiredOption(
        '--out <dir>',
        'the export folder (created owner-only; an earlier export there is replaced)',
      )
      .option(
        '--streams <list>',
        `comma-separated streams (${Object.keys(STREAMS).join(', ')}; default all)`,
        streamList,
      )
      .addOption(
        new Option('--format <format>', 'which files').choices(['parquet', 'csv', 'both']).default('both'),
      )
      .option(
        '--since-last',
        'append only what came since the last export into --out (resumes from its offsets)',
      ),
  ).action(
    async (flags: ReadFlags & { out: string; streams?: TopicKey[]; format: string; sinceLast?: boolean }) => {
      if (flags.sinceLast && (flags.from || flags.to))
        throw new Failure(
          '--since-last resumes where the last export stopped: it takes no --from or --to',
          2,
        );
      const { settings } = kafkaSettings(io);
      const formats: ExportFormat[] =
        flags.format === 'both' ? ['parquet', 'csv'] : [flags.format as ExportFormat];
      const r = await exportLog({
        ...replayOptions(io, flags, settings),
        out: flags.out,
        formats,
        ...(flags.streams ? { streams: flags.streams } : {}),
        ...(flags.sinceLast ? { sinceLast: true } : {}),
      });
      if (flags.json) return printJson(io, { out: flags.out, ...r });
      const width = Math.max(...Object.keys(r.tables).map((t) => t.length), 5);
      io.out(
        `${r.resumed ? 'appended' : 'exported'} ${r.events} events to ${flags.out}${r.skipped ? ` (${r.skipped} records of event types this build does not know skipped)` : ''}\n` +
          Object.entries(r.tables)
            .map(([t, n]) => `  ${t.padEnd(width)}  ${n} rows\n`)
            .join(''),
      );
    },
  );

  root
    .command('query')
    .description('run DuckDB SQL over an export (every table is a view of its name), or a named report')
    .argument('[sql]', 'the SQL, e.g. "select state, count(*) from messages group by all"')
    .option('--dir <dir>', 'the export folder to query')
    .option('--from-log', 'query a fresh read of the log instead (exported to a temporary folder first)')
    .addOption(new Option('--report <name>', 'a named report instead of SQL').choices(Object.keys(REPORTS)))
    .addOption(
      new Option('--output <format>', 'how to print the result')
        .choices(['table', 'csv', 'json'])
        .default('table'),
    )
    .option('--json', 'same as --output json')
    .option('--company <id>', "with --from-log: only this company's events")
    .option('--threads <n>', 'with --from-log: worker threads', threadCount)
    .addHelpText(
      'after',
      `\nreports:\n${Object.entries(REPORTS)
        .map(([name, r]) => `  ${name.padEnd(18)} ${r.title}`)
        .join('\n')}`,
    )
    .action(
      async (
        sql: string | undefined,
        flags: {
          dir?: string;
          fromLog?: boolean;
          report?: string;
          output: OutputFormat;
          json?: boolean;
          company?: string;
          threads?: number;
        },
      ) => {
        if (sql && flags.report) throw new Failure('give either SQL or --report, not both', 2);
        const text = flags.report ? REPORTS[flags.report]!.sql : sql;
        if (!text) throw new Failure('query needs SQL or --report <name>', 2);
        if (!flags.dir === !flags.fromLog)
          throw new Failure('query needs --dir <export folder> or --from-log', 2);
        let dir = flags.dir;
        let temporary: string | undefined;
        if (flags.fromLog) {
          const { settings } = kafkaSettings(io);
          temporary = await mkdtemp(join(tmpdir(), 'mds-replay-query-'));
          dir = join(temporary, 'export');
          await exportLog({
            ...replayOptions(
              io,
              {
                progress: true,
                ...(flags.company ? { company: flags.company } : {}),
                ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
              },
              settings,
            ),
            out: dir,
            formats: ['parquet'],
          });
        }
        try {
          const result = await queryExport(dir!, text);
          io.out(`${formatResult(result, flags.json ? 'json' : flags.output)}\n`);
        } finally {
          if (temporary) await rm(temporary, { recursive: true, force: true });
        }
      },
    );

  readOptions(
    root
      .command('rebuild')
      .description("rebuild a service's state from the log into a fresh schema, beside the live one")
      .addOption(
        new Option('--service <name>', 'whose state')
          .choices(['gateway', 'client-registry'])
          .default('gateway'),
      )
      .requiredOption('--schema <name>', 'the fresh schema to rebuild into'),
  ).action(async (flags: ReadFlags & { service: string; schema: string }) => {
    const { settings, databaseUrl } = kafkaSettings(io);
    if (!databaseUrl) throw new Failure('rebuild needs DATABASE_URL (where the schema is made)', 2);
    if (flags.service === 'client-registry') {
      if (flags.from || flags.to || flags.company)
        throw new Failure(
          "client-registry's state is rebuilt from its whole log: no --from, --to or --company",
          2,
        );
      const bin = registryRebuildBin(io.env);
      const r = await spawnRebuild(bin, ['--schema', flags.schema, '--json'], io.env);
      if (r.code !== 0)
        throw new Failure(
          `client-registry's rebuild (${bin}) failed: ${r.stderr.trim() || `exit ${r.code}`}`,
        );
      const { events } = JSON.parse(r.stdout) as { events: number };
      if (flags.json) return printJson(io, { service: 'client-registry', schema: flags.schema, events });
      io.out(`rebuilt client-registry's state from ${events} events into schema ${flags.schema}\n`);
      return;
    }
    const r = await rebuildEventStates({
      ...replayOptions(io, flags, settings),
      databaseUrl,
      schema: flags.schema,
    });
    if (flags.json) return printJson(io, { service: 'gateway', schema: flags.schema, ...r });
    io.out(`rebuilt ${r.states} states from ${r.events} events into schema ${flags.schema}\n`);
  });

  readOptions(
    root
      .command('summary')
      .description('messages by state, error_code, messenger and bot; accepted -> sent latency'),
  ).action(async (flags: ReadFlags) => {
    const { settings } = kafkaSettings(io);
    const s = await summaryOf(replayOptions(io, flags, settings));
    if (flags.json) return printJson(io, s);
    io.out(`${formatSummary(s)}\n`);
  });
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
