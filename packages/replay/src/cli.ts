#!/usr/bin/env node
// mds-replay: rebuild the read model, export events and states for analysts, or summarise them, from the
// event log. Reads the topics from the beginning (or --from) to where they end when it starts.
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { SingleBar, Presets } from 'cli-progress';
import { kafkaEnv, loadConfig, z } from '@mds/config';
import { createKafkaClient, kafkaSettingsFromEnv } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { exportEvents, type ExportFormat } from './export.js';
import {
  formatSummary,
  rebuildEventStates,
  summaryOf,
  trimmedPartitions,
  type ReplayOptions,
} from './replay.js';

export const USAGE = `usage: mds-replay <command> [options]

commands:
  rebuild --schema <name>      rebuild the gateway's read model (event_states) into a fresh schema
  export --out <dir>           write events and message/request states as Parquet and CSV (DuckDB)
  summary                      counts by state, error_code, messenger and bot; accepted -> sent latency

options:
  --from <ISO time>            start at the first event recorded at or after this time (default: the beginning)
  --to <ISO time>              only events that occurred before this time
  --company <company id>       only this company's events
  --format parquet|csv|both    export only: which files (default both)
  --no-progress                no progress bar (it goes to stderr, and only to a terminal)

environment: KAFKA_BROKERS (required), KAFKA_TOPIC_PREFIX, KAFKA_SSL, KAFKA_SASL_*; DATABASE_URL for rebuild`;

export interface Command {
  command: 'rebuild' | 'export' | 'summary';
  from?: Date;
  to?: Date;
  companyId?: string;
  schema?: string;
  out?: string;
  formats: ExportFormat[];
  progress: boolean;
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

function time(value: string | undefined, option: string): Date | undefined {
  if (value === undefined) return undefined;
  const parsed = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(parsed.getTime()))
    throw new UsageError(`${option} must be an ISO 8601 time, e.g. 2026-01-31T00:00:00Z (got "${value}")`);
  return parsed;
}

/** Parses the command line; throws UsageError with what is wrong. */
export function parseCommand(argv: string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        from: { type: 'string' },
        to: { type: 'string' },
        company: { type: 'string' },
        schema: { type: 'string' },
        out: { type: 'string' },
        format: { type: 'string', default: 'both' },
        'no-progress': { type: 'boolean', default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const [command, ...extra] = positionals;
  if (command !== 'rebuild' && command !== 'export' && command !== 'summary')
    throw new UsageError(command ? `unknown command "${command}"` : 'missing command');
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  if (command === 'rebuild' && !values.schema) throw new UsageError('rebuild needs --schema <name>');
  if (command === 'export' && !values.out) throw new UsageError('export needs --out <dir>');
  const formats = { both: ['parquet', 'csv'], parquet: ['parquet'], csv: ['csv'] }[values.format] as
    ExportFormat[] | undefined;
  if (!formats) throw new UsageError(`--format is parquet, csv or both (got "${values.format}")`);
  const from = time(values.from, '--from');
  const to = time(values.to, '--to');
  if (from && to && to <= from) throw new UsageError('--to must be after --from');
  return {
    command,
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
    ...(values.company ? { companyId: values.company } : {}),
    ...(values.schema ? { schema: values.schema } : {}),
    ...(values.out ? { out: values.out } : {}),
    formats,
    progress: !values['no-progress'],
  };
}

const envSchema = z.object({
  ...kafkaEnv,
  DATABASE_URL: z.string().optional(),
  LOG_LEVEL: z.string().default('warn'),
});

export async function run(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let command: Command;
  try {
    command = parseCommand(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`mds-replay: ${error.message}\n\n${USAGE}\n`);
    return 2;
  }
  let config: z.infer<typeof envSchema>;
  try {
    config = loadConfig(envSchema, env);
  } catch (error) {
    process.stderr.write(`mds-replay: ${(error as Error).message}\n`);
    return 2;
  }
  if (command.command === 'rebuild' && !config.DATABASE_URL) {
    process.stderr.write('mds-replay: rebuild needs DATABASE_URL\n');
    return 2;
  }
  const logger = createLogger({ service: 'mds-replay', level: config.LOG_LEVEL });
  const settings = kafkaSettingsFromEnv(config, 'mds-replay');
  const bar =
    command.progress && process.stderr.isTTY
      ? new SingleBar(
          {
            format: '{bar} {percentage}% | {value}/{total} events | {eta_formatted} left',
            stream: process.stderr,
          },
          Presets.shades_classic,
        )
      : undefined;
  let started = false;
  const options: ReplayOptions = {
    kafka: createKafkaClient(settings, logger),
    logger,
    topicPrefix: settings.topicPrefix,
    ...(command.from ? { from: command.from } : {}),
    ...(command.to ? { to: command.to } : {}),
    ...(command.companyId ? { companyId: command.companyId } : {}),
    onProgress: (done, total) => {
      if (!bar) return;
      if (!started) bar.start(total, 0);
      started = true;
      bar.update(done);
    },
  };
  const began = Date.now();
  try {
    if (!command.from) {
      const trimmed = await trimmedPartitions(options);
      if (trimmed.length > 0) {
        process.stderr.write(
          `mds-replay: warning: retention has deleted the oldest events of ${trimmed.join(', ')}; states are folded from what is left\n`,
        );
      }
    }
    switch (command.command) {
      case 'rebuild': {
        const r = await rebuildEventStates({
          ...options,
          databaseUrl: config.DATABASE_URL!,
          schema: command.schema!,
        });
        bar?.stop();
        process.stdout.write(
          `rebuilt ${r.states} states from ${r.events} events into schema ${command.schema}\n`,
        );
        break;
      }
      case 'export': {
        const r = await exportEvents({ ...options, out: command.out!, formats: command.formats });
        bar?.stop();
        process.stdout.write(
          `exported ${r.events} events and ${r.states} states:\n${r.files.map((f) => `  ${f}\n`).join('')}`,
        );
        break;
      }
      case 'summary': {
        const s = await summaryOf(options);
        bar?.stop();
        process.stdout.write(`${formatSummary(s)}\n`);
        break;
      }
    }
  } catch (error) {
    bar?.stop();
    process.stderr.write(`mds-replay: ${(error as Error).message}\n`);
    return 1;
  }
  process.stderr.write(`done in ${((Date.now() - began) / 1000).toFixed(1)} s\n`);
  return 0;
}

// Run when executed (not when imported by tests).
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  process.exitCode = await run(process.argv.slice(2));
}
