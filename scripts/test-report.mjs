// Where `npm test`'s minutes went: the slowest test files (each package's run writes every file's whole cost,
// see vitest.shared.ts) and the slowest tasks of turbo's run summary, printed at the end of every run.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const seconds = (ms) => (ms / 1000).toFixed(0);
const pad = (text, width) => String(text).padStart(width);

/** Every test file of the run: where (relative to the root), what it cost, how it ended. */
export function fileTimings(root, workspaceDirs) {
  return workspaceDirs.flatMap((dir) => {
    const file = join(dir, 'test-artifacts', 'vitest-files.json');
    if (!existsSync(file)) return [];
    const run = JSON.parse(readFileSync(file, 'utf8'));
    return run.files.map((f) => ({ ...f, file: relative(root, join(dir, f.file)) }));
  });
}

/** The `limit` slowest files, with each one's share of all files' time. */
export function slowestFilesTable(files, limit = 15) {
  const total = files.reduce((sum, f) => sum + f.ms, 0);
  const rows = [...files].sort((a, b) => b.ms - a.ms).slice(0, limit);
  return [
    `the slowest test files (each with its set-up, import, hooks and tests), of ${files.length} files taking ` +
      `${seconds(total)} s in all:`,
    '     s  share  file',
    ...rows.map(
      (f) =>
        `${pad(seconds(f.ms), 6)} ${pad(Math.round((100 * f.ms) / Math.max(total, 1)), 4)} %  ${f.file}` +
        (f.state === 'passed' ? '' : `  (${f.state})`),
    ),
  ];
}

/** The run summaries turbo wrote (`--summarize`) since `since`. */
export function turboSummaries(root, since) {
  const dir = join(root, '.turbo', 'runs');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .map((name) => join(dir, name))
    .filter((file) => statSync(file).mtimeMs >= since)
    .map((file) => JSON.parse(readFileSync(file, 'utf8')));
}

/** Time per kind of task (lint, typecheck, test) and the slowest tasks, from turbo's run summaries. */
export function slowestTasksTable(summaries, limit = 8) {
  const tasks = summaries
    .flatMap((summary) => summary.tasks ?? [])
    .filter((t) => t.execution?.startTime && t.execution?.endTime && t.cache?.status !== 'HIT')
    .map((t) => ({ id: t.taskId, task: t.task, ms: t.execution.endTime - t.execution.startTime }))
    .filter((t) => t.ms > 0);
  if (tasks.length === 0) return [];
  const byKind = new Map();
  for (const t of tasks) byKind.set(t.task, (byKind.get(t.task) ?? 0) + t.ms);
  const kinds = [...byKind].sort((a, b) => b[1] - a[1]).map(([task, ms]) => `${task} ${seconds(ms)} s`);
  return [
    `turbo's tasks that ran (${tasks.length}, not those its cache answered): ${kinds.join(', ')}; the slowest:`,
    ...[...tasks]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, limit)
      .map((t) => `${pad(seconds(t.ms), 6)} s  ${t.id}`),
  ];
}

const firstLines = (text, count) => String(text).split('\n').slice(0, count);

/**
 * Why each failed file failed, from every package's vitest JSON report: the file's own error (a hook that threw
 * or timed out, an error outside any test: its tests are then reported skipped, not failed) and each failed
 * test's first lines. Printed at the very end of a run, where a CI log cut to its tail still shows it.
 */
export function failureDigest(root, workspaceDirs, { linesPerFailure = 12, maxFailures = 12 } = {}) {
  const failures = workspaceDirs.flatMap((dir) => {
    const file = join(dir, 'test-artifacts', 'vitest-results.json');
    if (!existsSync(file)) return [];
    const report = JSON.parse(readFileSync(file, 'utf8'));
    return report.testResults
      .filter((result) => result.status === 'failed')
      .flatMap((result) => {
        const where = relative(root, result.name);
        const ofFile = result.message ? [{ where, what: '(the file itself)', text: result.message }] : [];
        const ofTests = result.assertionResults
          .filter((test) => test.status === 'failed')
          .map((test) => ({ where, what: test.fullName, text: test.failureMessages?.[0] ?? '' }));
        return [...ofFile, ...ofTests];
      });
  });
  if (failures.length === 0) return [];
  return [
    `why ${failures.length} failed (each failure's first ${linesPerFailure} lines):`,
    ...failures
      .slice(0, maxFailures)
      .flatMap((f) => [
        `✗ ${f.where} > ${f.what}`,
        ...firstLines(f.text, linesPerFailure).map((l) => `    ${l}`),
      ]),
    ...(failures.length > maxFailures ? [`… and ${failures.length - maxFailures} more`] : []),
  ];
}
