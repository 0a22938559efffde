// `npm start`: the whole stack on this machine. A real Kafka broker and PostgreSQL (kept between runs in
// .run/dev), then every service that exists, each as its own process. Ctrl-C stops what this started,
// by process id, in reverse order, and nothing else.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runDir, startInfra, stopProcess } from '../packages/local-infra/dist/index.js';

const root = join(import.meta.dirname, '..');
const log = (line) => console.log(`[start] ${line}`);

/** Every service in start order, with the local port of its HTTP server. */
const SERVICES = [
  { name: 'messenger-simulator', port: 8090 },
  { name: 'client-registry', port: 8081 },
  { name: 'telegram-sender', port: 8082 },
  { name: 'max-sender', port: 8083 },
  { name: 'webhook-dispatcher', port: 8084 },
  { name: 'gateway', port: 8080 },
];

const began = Date.now();
const infra = await startInfra({
  name: 'dev',
  kafkaPort: Number(process.env.MDS_KAFKA_PORT ?? 9092),
  postgresPort: Number(process.env.MDS_PG_PORT ?? 54329),
  log,
});
log(`infrastructure ready in ${((Date.now() - began) / 1000).toFixed(1)} s`);
log(`  KAFKA_BROKERS=${infra.kafkaBrokers}`);
log(`  DATABASE_URL=${infra.databaseUrl}`);

const logs = join(runDir('dev'), 'logs');
mkdirSync(logs, { recursive: true });
const running = [];
for (const service of SERVICES) {
  const entry = join(root, 'services', service.name, 'dist', 'main.js');
  if (!existsSync(entry)) continue;
  const out = createWriteStream(join(logs, `${service.name}.log`), { flags: 'a' });
  const child = spawn(process.execPath, [entry], {
    env: {
      ...process.env,
      KAFKA_BROKERS: infra.kafkaBrokers,
      DATABASE_URL: infra.databaseUrl,
      HTTP_PORT: String(service.port),
      HTTP_HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  running.push({ ...service, child });
  log(
    `started ${service.name} (pid ${child.pid}) on http://127.0.0.1:${service.port}, log ${join(logs, `${service.name}.log`)}`,
  );
}
if (running.length === 0) log('no service is built yet: only the infrastructure runs');
log('running; Ctrl-C stops everything started here');

let stopping = false;
async function stopAll(signal) {
  if (stopping) return;
  stopping = true;
  log(`${signal}: stopping`);
  for (const { name, child } of [...running].reverse()) {
    await stopProcess(child.pid, 30_000);
    log(`stopped ${name}`);
  }
  await infra.stop();
  const what = [infra.startedHere.kafka && 'Kafka', infra.startedHere.postgres && 'PostgreSQL'].filter(
    Boolean,
  );
  log(what.length ? `stopped ${what.join(' and ')}` : 'left the infrastructure that was already running');
  process.exit(0);
}
process.on('SIGINT', () => void stopAll('SIGINT'));
process.on('SIGTERM', () => void stopAll('SIGTERM'));
for (const { name, child } of running) {
  child.on('exit', (code, signal) => {
    if (!stopping) log(`${name} exited (${signal ?? code}); see its log`);
  });
}
// Keep the process alive until a signal arrives.
setInterval(() => undefined, 1 << 30);
