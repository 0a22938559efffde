// npm run bench (webhook-dispatcher): webhooks per second from outcome events in Kafka to a fast local
// receiver, and the same while one company's endpoint takes 10 s to answer each webhook. The registry and
// the dispatcher run as processes (built), the receiver in a process of its own; loopback only, bounded.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { newEvent, topics, type MessageEvent } from '@mds/contracts';
import { createEventPublisher, createKafkaClient } from '@mds/kafka';
import { freePort } from '@mds/local-infra';
import { createLogger } from '@mds/logging';
import { Stack } from '@mds/testkit';

const WEBHOOKS = Number(process.env.BENCH_WEBHOOKS ?? 20_000);
const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 10);
const SLOW_WEBHOOKS = Number(process.env.BENCH_SLOW_WEBHOOKS ?? 400);
const ADMIN = 'bench-admin-token-0123456789';

const receiverPort = await freePort();
const receiver = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'receiver.ts')], {
  env: { ...process.env, PORT: String(receiverPort), SLOW_MS: '10000' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise<void>((resolve) => receiver.stdout.once('data', () => resolve()));
const receiverUrl = `http://127.0.0.1:${receiverPort}`;

const grpcPort = await freePort();
const stack = await Stack.start({
  env: { LOG_LEVEL: 'warn', INTERNAL_GRPC_TOKEN: randomBytes(24).toString('base64url') },
  services: [
    {
      name: 'client-registry',
      // Only its gRPC (webhook endpoints) is used: on topics of its own it does not route the events here.
      env: {
        KAFKA_TOPIC_PREFIX: `bench-registry-${randomUUID().slice(0, 8)}.`,
        GRPC_PORT: String(grpcPort),
        REGISTRY_ADMIN_TOKEN: ADMIN,
        REGISTRY_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      },
    },
    {
      name: 'webhook-dispatcher',
      env: {
        REGISTRY_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
        DISPATCHER_ADMIN_TOKEN: ADMIN,
        WEBHOOK_SSRF_ALLOWLIST: '127.0.0.1/32',
        ...(process.env.BENCH_PROFILE_DIR
          ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}` }
          : {}),
      },
    },
  ],
});

const quiet = createLogger({ service: 'bench', level: 'silent' });
const publisher = createEventPublisher({
  kafka: createKafkaClient({ brokers: stack.infra.kafkaBrokers.split(','), clientId: 'bench' }, quiet),
  logger: quiet,
  topicPrefix: stack.topicPrefix,
});

try {
  await publisher.connect();
  const registry = stack.service('client-registry').url;
  const admin = async (method: string, path: string, payload?: unknown) =>
    (await (
      await fetch(`${registry}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        ...(payload ? { body: JSON.stringify(payload) } : {}),
      })
    ).json()) as Record<string, string>;
  const company = async (url: string) => {
    const created = await admin('POST', '/companies', { name: 'Bench' });
    await admin('PUT', `/companies/${created.company_id}/webhook`, { url });
    return created.company_id!;
  };
  const fast: string[] = [];
  for (let i = 0; i < COMPANIES; i++) fast.push(await company(`${receiverUrl}/fast/${i}/hook`));
  const slow = await company(`${receiverUrl}/slow/0/hook`);

  const sentEvent = (companyId: string) => {
    const messageId = randomUUID();
    return {
      topic: topics.message,
      key: messageId,
      record: newEvent<MessageEvent>({
        eventId: randomUUID(),
        occurredAt: new Date(),
        companyId,
        streamId: messageId,
        producer: 'bench',
        event: {
          $case: 'messageSent',
          value: { botId: 'bench', providerMessageId: '1', sentAt: new Date(), attempts: 1 },
        },
      }),
    };
  };
  const stats = async () => (await (await fetch(`${receiverUrl}/stats`)).json()) as Record<string, number>;
  const fastTotal = async () =>
    Object.entries(await stats())
      .filter(([k]) => k.startsWith('/fast/'))
      .reduce((n, [, v]) => n + v, 0);

  /** Publishes `count` outcomes spread over the fast companies; resolves with webhooks/s until all arrived. */
  async function run(count: number): Promise<number> {
    const before = await fastTotal();
    const started = performance.now();
    for (let i = 0; i < count; i += 1_000) {
      await publisher.publish(
        Array.from({ length: Math.min(1_000, count - i) }, (_, j) => sentEvent(fast[(i + j) % fast.length]!)),
      );
    }
    const deadline = Date.now() + 300_000;
    while ((await fastTotal()) < before + count) {
      if (Date.now() > deadline) throw new Error('webhooks did not all arrive within 5 minutes');
      await new Promise((r) => setTimeout(r, 50));
    }
    return count / ((performance.now() - started) / 1000);
  }

  const dispatcherMetrics = async () => {
    const text = await (await fetch(`${stack.service('webhook-dispatcher').opsUrl}/metrics`)).text();
    return (name: string) =>
      Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN);
  };

  // BENCH_TRACE=1: every 500 ms, events consumed, attempts made and deliveries in flight (where a run waits).
  const trace = process.env.BENCH_TRACE
    ? setInterval(() => {
        void dispatcherMetrics().then((m) =>
          console.log(
            `trace consumed ${m('mds_events_consumed_total')} attempts ${m('mds_webhook_attempt_seconds_count')} in flight ${m('mds_webhook_in_flight')}`,
          ),
        );
      }, 500)
    : undefined;
  await run(Math.min(2_000, WEBHOOKS)); // warm-up: JIT, connections, each company's endpoints read once
  const before = await dispatcherMetrics();
  const loadBefore = loadavg()[0]!;
  const healthy = await run(WEBHOOKS);
  const after = await dispatcherMetrics();
  const loadAfter = loadavg()[0]!;
  const delta = (name: string) => after(name) - before(name);
  await publisher.publish(Array.from({ length: SLOW_WEBHOOKS }, () => sentEvent(slow)));
  await new Promise((r) => setTimeout(r, 1_000)); // the slow endpoint's slots are taken
  const withSlow = await run(WEBHOOKS);
  const slowDone = (await stats())['/slow/0'] ?? 0;
  clearInterval(trace);

  console.log(
    `\nwebhook-dispatcher: MessageSent in Kafka -> signed POST answered 200 by a local receiver, ${COMPANIES} companies, ${WEBHOOKS} webhooks per run, on this machine\n`,
  );
  console.log(
    `healthy endpoints only:                 ${healthy.toFixed(0).padStart(6)} webhooks/s   (target >= 2000)`,
  );
  const change = ((withSlow - healthy) / healthy) * 100;
  console.log(
    `same, while one endpoint takes 10 s:    ${withSlow.toFixed(0).padStart(6)} webhooks/s   ` +
      `(${change >= 0 ? '+' : ''}${change.toFixed(1)} % (${change >= 0 ? 'faster' : 'slower'}); target: at most 10 % slower; ` +
      `the slow one answered ${slowDone} of ${SLOW_WEBHOOKS} meanwhile)`,
  );
  const claims = delta('mds_webhook_claim_batch_size_count');
  const stores = delta('mds_webhook_store_batch_size_count');
  const attempts = delta('mds_webhook_attempt_seconds_count');
  console.log(
    `healthy run: ${(claims / WEBHOOKS).toFixed(3)} claim statements and ${(stores / WEBHOOKS).toFixed(3)} store statements per webhook ` +
      `(${(delta('mds_webhook_claim_batch_size_sum') / claims).toFixed(1)} deliveries per claim, ` +
      `${(delta('mds_webhook_store_batch_size_sum') / stores).toFixed(1)} results per store); ` +
      `mean attempt latency ${((delta('mds_webhook_attempt_seconds_sum') / attempts) * 1000).toFixed(1)} ms; ` +
      `dispatcher CPU ${((delta('process_cpu_seconds_total') / WEBHOOKS) * 1e6).toFixed(0)} µs per webhook; ` +
      `endpoint lists read from the registry ${delta('mds_webhook_endpoint_reads_total')} ` +
      `(${(delta('mds_webhook_endpoint_reads_total') / WEBHOOKS).toFixed(4)} per webhook); ` +
      `load average ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after`,
  );
} finally {
  await publisher.disconnect();
  receiver.kill('SIGTERM');
  await stack.stop();
}
