// `npm test`: one real Kafka broker and one PostgreSQL for the whole run (or KAFKA_BROKERS/DATABASE_URL),
// then lint, typecheck and every package's tests, then Prettier and the unused-dependency check (knip), then one
// total and where the minutes went, then stop what we started.
//
// Two lanes from the start: the end-to-end suite (the longest task by far, its files two at a time: they
// mostly wait on their stacks) and turbo with everything else, two tasks at a time. Left to turbo alone, the
// end-to-end suite started last, once every build it depends on had had its turn.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startInfra } from '../packages/local-infra/dist/index.js';
import {
  failureDigest,
  fileTimings,
  slowestFilesTable,
  slowestTasksTable,
  turboSummaries,
} from './test-report.mjs';

const root = join(import.meta.dirname, '..');
const started = Date.now();
const log = (line) => console.log(`[test] ${line}`);
const E2E = '@mds/test-e2e';

function workspaces() {
  return ['packages', 'services']
    .flatMap((dir) =>
      existsSync(join(root, dir)) ? readdirSync(join(root, dir)).map((name) => join(root, dir, name)) : [],
    )
    .concat(join(root, 'test-e2e'), join(root, 'deploy'), join(root, 'docs'))
    .filter((dir) => existsSync(join(dir, 'package.json')));
}

for (const dir of workspaces()) {
  for (const report of ['vitest-results.json', 'vitest-files.json'])
    rmSync(join(dir, 'test-artifacts', report), { force: true });
}

const infra = await startInfra({ name: `test-${process.pid}`, ephemeral: true, log });
log(
  `Kafka ${infra.kafkaVersion ? `(Apache Kafka ${infra.kafkaVersion}) ` : ''}at ${infra.kafkaBrokers}; ` +
    `PostgreSQL ${infra.postgresVersion ?? ''} at ${infra.databaseUrl.replace(/:[^:@/]*@/, ':***@')}`,
);
const env = { ...process.env, KAFKA_BROKERS: infra.kafkaBrokers, DATABASE_URL: infra.databaseUrl };

const children = new Set();
const stop = async (code) => {
  for (const child of children) child.kill('SIGTERM');
  await infra.stop();
  process.exit(code);
};
process.once('SIGINT', () => void stop(130));
process.once('SIGTERM', () => void stop(143));

/** Runs a command to its end, its output line by line with `prefix` (as turbo prefixes its tasks'); answers its exit code. */
function run(command, args, { cwd = root, prefix } = {}) {
  const child = spawn(command, args, {
    cwd,
    env,
    stdio: ['ignore', prefix ? 'pipe' : 'inherit', prefix ? 'pipe' : 'inherit'],
  });
  children.add(child);
  if (prefix) {
    for (const stream of [child.stdout, child.stderr])
      createInterface({ input: stream }).on('line', (line) => console.log(`${prefix}${line}`));
  }
  return new Promise((resolve) => {
    child.once('error', (error) => {
      console.error(`${prefix ?? ''}${command}: ${error.message}`);
      resolve(1);
    });
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code ?? 1);
    });
  });
}

const bin = (name) => join(root, 'node_modules', '.bin', name);
const extra = process.argv.slice(2);
const turbo = (...args) => run(bin('turbo'), ['run', ...args, '--continue', '--summarize', ...extra]);
const lanes = {};
const timed = async (lane, work) => {
  const began = Date.now();
  const code = await work();
  lanes[lane] = Date.now() - began;
  return code;
};
// With arguments (`npm test -- --filter=@mds/kafka`), turbo alone, as asked.
const [e2e, rest] = extra.length
  ? [0, await turbo('lint', 'typecheck', 'test', '--concurrency=2')]
  : await Promise.all([
      timed('the end-to-end suite', () =>
        run(bin('vitest'), ['run'], { cwd: join(root, 'test-e2e'), prefix: `${E2E}:test: ` }),
      ),
      timed('turbo', async () => {
        const everything = await turbo('lint', 'typecheck', 'test', '--concurrency=2', `--filter=!${E2E}`);
        const ofE2e = await turbo('lint', 'typecheck', `--filter=${E2E}`);
        return everything || ofE2e;
      }),
    ]);
if (e2e !== 0) log(`${E2E}#test failed`);

const prettier = await run(bin('prettier'), ['--check', '.', '--log-level', 'warn']);
if (prettier !== 0) log('formatting differs from Prettier: run `npm run format`');
// A dependency nothing imports (knip.jsonc lists what it cannot see, and why).
const unusedDependencies = await run(bin('knip'), ['--dependencies', '--no-progress']);
if (unusedDependencies !== 0) log('a package declares a dependency it does not use (knip, above): remove it');

let passed = 0;
let failed = 0;
let skipped = 0;
for (const dir of workspaces()) {
  const file = join(dir, 'test-artifacts', 'vitest-results.json');
  if (!existsSync(file)) continue;
  const report = JSON.parse(readFileSync(file, 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  skipped += report.numPendingTests + report.numTodoTests;
}
for (const line of slowestFilesTable(fileTimings(root, workspaces()))) log(line);
for (const line of slowestTasksTable(turboSummaries(root, started))) log(line);
if (Object.keys(lanes).length)
  log(
    `lanes: ${Object.entries(lanes)
      .map(([lane, ms]) => `${lane} ${Math.round(ms / 1000)} s`)
      .join(', ')}`,
  );
for (const line of failureDigest(root, workspaces())) log(line);
log(`finished in ${Math.round((Date.now() - started) / 1000)} s`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
const exitCode =
  e2e !== 0 || rest !== 0 || prettier !== 0 || unusedDependencies !== 0 || failed > 0 || passed === 0 ? 1 : 0;
await stop(exitCode);
