// npm run bench (gateway): accepted sends per second and latency percentiles against the real broker,
// beside a bare express endpoint measured in the same run on the same machine. Loopback only, bounded.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freePort } from '@mds/local-infra';
import { Stack } from '@mds/testkit';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONCURRENCIES = (process.env.BENCH_CONCURRENCY ?? '1,10,50,100').split(',').map(Number);
const ADMIN = 'bench-admin-token-0123456789';
const body = JSON.stringify({
  phone_number: '79123456789',
  text: 'Your order 42 is ready for pickup',
  service: 'telegram',
  buttons: [{ text: 'Track', url: 'https://example.com/t/42' }],
});

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(
  url: string,
  headers: Record<string, string>,
  connections: number,
  overallRate?: number,
): Promise<Figures> {
  const result = await autocannon({
    url: `${url}/api/v1/send`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    connections,
    duration: DURATION_S,
    ...(overallRate ? { overallRate } : {}),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

const row = (label: string, f: Figures) =>
  `${label.padEnd(28)} ${f.rps.toFixed(0).padStart(8)} req/s   p50 ${String(f.p50).padStart(4)} ms   p99 ${String(f.p99).padStart(4)} ms   errors ${f.errors}`;

const grpcPort = await freePort();
const stack = await Stack.start({
  env: { LOG_LEVEL: 'warn', INTERNAL_GRPC_TOKEN: randomBytes(24).toString('base64url') },
  services: [
    {
      name: 'client-registry',
      // Only its gRPC (API key -> company) is measured here: on topics of its own it does not route the
      // benchmark's messages, which would be the pipeline benchmark, not this one.
      env: {
        KAFKA_TOPIC_PREFIX: 'bench-registry.',
        GRPC_PORT: String(grpcPort),
        REGISTRY_ADMIN_TOKEN: ADMIN,
        REGISTRY_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      },
    },
    {
      name: 'gateway',
      env: {
        REGISTRY_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
        RATE_LIMIT_SEND_PER_KEY: '1000000',
        RATE_LIMIT_SEND_PER_COMPANY: '1000000',
        ...(process.env.BENCH_PROFILE_DIR
          ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}` }
          : {}),
      },
    },
  ],
});
const barePort = await freePort();
const bare = spawn(process.execPath, [join(import.meta.dirname, 'bare-express.ts')], {
  env: { ...process.env, PORT: String(barePort) },
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise<void>((resolve) => bare.stdout.once('data', () => resolve()));

try {
  const registry = stack.service('client-registry').url;
  const adminCall = async (path: string, payload: unknown) =>
    (await (
      await fetch(`${registry}/admin/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      })
    ).json()) as Record<string, string>;
  const company = await adminCall('/companies', { name: 'Bench' });
  const key = await adminCall(`/companies/${company.company_id}/api-keys`, { label: 'bench' });
  const gateway = stack.service('gateway').url;
  const auth = { 'x-api-key': key.api_key! };

  // Warm both up (JIT, connections, the API key cache).
  await load(`http://127.0.0.1:${barePort}`, {}, 10);
  await load(gateway, auth, 10);

  console.log(
    `\nPOST /api/v1/send, ${DURATION_S} s per step, ${body.length}-byte body, autocannon on the same 2-core machine\n`,
  );
  let peakBare = 0;
  let peakGateway = 0;
  for (const c of CONCURRENCIES) {
    const b = await load(`http://127.0.0.1:${barePort}`, {}, c);
    const g = await load(gateway, auth, c);
    peakBare = Math.max(peakBare, b.rps);
    peakGateway = Math.max(peakGateway, g.rps);
    console.log(row(`bare express, ${c} conn`, b));
    console.log(row(`gateway (Kafka acks=all), ${c} conn`, g));
    console.log(`  ratio gateway/bare: ${(g.rps / b.rps).toFixed(2)}`);
  }
  const half = Math.round(peakGateway / 2);
  // prom-client's event loop figures cover the time since its last reset: read once before, to reset.
  const ops = stack.service('gateway').opsUrl;
  await fetch(`${ops}/metrics`);
  const atHalf = await load(gateway, auth, 50, half);
  const metrics = await (await fetch(`${ops}/metrics`)).text();
  const sum = (name: string) =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+-]+)$`, 'm').exec(metrics)?.[1] ?? NaN);
  const publishes = sum('mds_event_publish_batch_size_count');
  console.log(
    `\nKafka: ${sum('mds_event_publish_batch_size_sum')} events in ${publishes} produce requests ` +
      `(${(sum('mds_event_publish_batch_size_sum') / publishes).toFixed(1)} per request), ` +
      `mean acknowledgement ${((sum('mds_event_publish_seconds_sum') / sum('mds_event_publish_seconds_count')) * 1000).toFixed(1)} ms`,
  );
  console.log(
    `\npeak: bare express ${peakBare.toFixed(0)} req/s, gateway ${peakGateway.toFixed(0)} req/s, ratio ${(peakGateway / peakBare).toFixed(2)} (target >= 0.50)`,
  );
  console.log(row(`gateway at half peak (${half}/s)`, atHalf) + '   (target p99 <= 20 ms)');
  console.log(
    `  the gateway's event loop meanwhile: delay p99 ${(sum('nodejs_eventloop_lag_p99_seconds') * 1000).toFixed(1)} ms, ` +
      `max ${(sum('nodejs_eventloop_lag_max_seconds') * 1000).toFixed(1)} ms; ` +
      `GC ${(sum('nodejs_gc_duration_seconds_sum') * 1000).toFixed(0)} ms in ${sum('nodejs_gc_duration_seconds_count')} pauses over the run`,
  );
} finally {
  bare.kill('SIGTERM');
  await stack.stop();
}
