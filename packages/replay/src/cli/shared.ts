// What mds-replay's commands share: the I/O it writes to, its failures (with their exit codes), the
// option parsers, the read options (--from, --to, --company, --threads, --no-progress, --json) and the
// Kafka settings from the environment.
import { type Command, InvalidArgumentError } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import { kafkaEnv, loadConfig, z } from '@mds/config';
import { kafkaSettingsFromEnv, type KafkaSettings } from '@mds/kafka';
import { streamsByName, type StreamKey } from '../streams.js';
import type { ReplayOptions } from '../replay.js';

const envSchema = z.object({ ...kafkaEnv, DATABASE_URL: z.string().optional() });

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** stderr is a terminal (progress bars only then) */
  tty: boolean;
}

export class Failure extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export function isoTime(value: string): Date {
  const parsed = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(parsed.getTime()))
    throw new InvalidArgumentError('expected an ISO 8601 time, e.g. 2026-01-31T00:00:00Z');
  return parsed;
}

export function threadCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 64) throw new InvalidArgumentError('expected a whole number 0-64');
  return n;
}

export function streamList(value: string): StreamKey[] {
  const streams = streamsByName();
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) throw new InvalidArgumentError('expected stream names');
  if (names.includes('all')) return Object.values(streams);
  return names.map((name) => {
    const key = streams[name];
    if (!key)
      throw new InvalidArgumentError(
        `unknown stream "${name}" (streams: ${Object.keys(streams).join(', ')}, all)`,
      );
    return key;
  });
}

export interface ReadFlags {
  from?: Date;
  to?: Date;
  company?: string;
  threads?: number;
  progress: boolean;
  json?: boolean;
}

export const readOptions = (c: Command) =>
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

export function kafkaSettings(io: Io): { settings: KafkaSettings; databaseUrl?: string } {
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

export function replayOptions(io: Io, flags: ReadFlags, settings: KafkaSettings): ReplayOptions {
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

export const printJson = (io: Io, value: unknown) => io.out(`${JSON.stringify(value, null, 2)}\n`);
