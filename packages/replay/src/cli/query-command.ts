// mds-replay query: DuckDB SQL (or a named report) over an export, or over a fresh read of the log.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import { exportLog } from '../export.js';
import { formatResult, queryExport, REPORTS, type OutputFormat } from '../query.js';
import { Failure, kafkaSettings, replayOptions, threadCount, type Io } from './shared.js';

export function addQueryCommand(root: Command, io: Io): void {
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
}
