// `npm test`: one real Kafka broker and one PostgreSQL for the whole run (or KAFKA_BROKERS/DATABASE_URL),
// then lint, typecheck and every package's tests through turbo, then one total, then stop what we started.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startInfra } from '../packages/local-infra/dist/index.js';

const root = join(import.meta.dirname, '..');
const started = Date.now();
const log = (line) => console.log(`[test] ${line}`);

function workspaces() {
  return ['packages', 'services']
    .flatMap((dir) =>
      existsSync(join(root, dir)) ? readdirSync(join(root, dir)).map((name) => join(root, dir, name)) : [],
    )
    .concat(join(root, 'test-e2e'), join(root, 'deploy'), join(root, 'docs'))
    .filter((dir) => existsSync(join(dir, 'package.json')));
}

for (const dir of workspaces()) rmSync(join(dir, 'test-artifacts', 'vitest-results.json'), { force: true });

const infra = await startInfra({ name: `test-${process.pid}`, ephemeral: true, log });
log(
  `Kafka ${infra.kafkaVersion ? `(Apache Kafka ${infra.kafkaVersion}) ` : ''}at ${infra.kafkaBrokers}; ` +
    `PostgreSQL ${infra.postgresVersion ?? ''} at ${infra.databaseUrl.replace(/:[^:@/]*@/, ':***@')}`,
);

let child;
const stop = async (code) => {
  child?.kill('SIGTERM');
  await infra.stop();
  process.exit(code);
};
process.once('SIGINT', () => void stop(130));
process.once('SIGTERM', () => void stop(143));

const turbo = join(root, 'node_modules', '.bin', 'turbo');
const args = ['run', 'lint', 'typecheck', 'test', '--continue', '--concurrency=2', ...process.argv.slice(2)];
child = spawn(turbo, args, {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, KAFKA_BROKERS: infra.kafkaBrokers, DATABASE_URL: infra.databaseUrl },
});
const code = await new Promise((resolve) => child.once('exit', (c) => resolve(c ?? 1)));

const prettier = spawn(
  join(root, 'node_modules', '.bin', 'prettier'),
  ['--check', '.', '--log-level', 'warn'],
  { cwd: root, stdio: 'inherit' },
);
const formatCode = await new Promise((resolve) => prettier.once('exit', (c) => resolve(c ?? 1)));
if (formatCode !== 0) log('formatting differs from Prettier: run `npm run format`');

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
log(`finished in ${Math.round((Date.now() - started) / 1000)} s`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
const exitCode = code !== 0 || formatCode !== 0 || failed > 0 || passed === 0 ? 1 : 0;
await stop(exitCode);
