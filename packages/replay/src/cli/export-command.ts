// mds-replay export: the streams as typed tables (Parquet by day, CSV) and the folded tables.
import { type Command, Option } from 'commander';
import { exportLog, type ExportFormat } from '../export.js';
import { streamsByName, type StreamKey } from '../streams.js';
import {
  Failure,
  kafkaSettings,
  printJson,
  readOptions,
  replayOptions,
  streamList,
  type Io,
  type ReadFlags,
} from './shared.js';

export function addExportCommand(root: Command, io: Io): void {
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
        `comma-separated streams (${Object.keys(streamsByName()).join(', ')}; default all)`,
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
    async (
      flags: ReadFlags & { out: string; streams?: StreamKey[]; format: string; sinceLast?: boolean },
    ) => {
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
}
