// A flood of random API keys at the door (issue 18 item 5), loopback only, bounded: a real company's sends at
// 20/s for BENCH_DURATION_S, alone, then beside 1,000 random well-formed keys a second from one address, then
// from 1,000 addresses (X-Forwarded-For through TRUST_PROXY=loopback). Prints the real sends' p50/p99 and
// how many lookups each phase cost client-registry.
//   node --conditions=@mds/source --import tsx bench/flood.bench.ts   (after a build)
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { freePort } from '@mds/local-infra';
import { Stack } from '@mds/testkit';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const FLOOD_PER_SECOND = Number(process.env.BENCH_FLOOD_PER_SECOND ?? 1000);
const ADMIN = 'bench-admin-token-0123456789';
const body = JSON.stringify({
  phone_number: '79123456789',
  text: 'Your order 42 is ready',
  service: 'telegram',
});
const randomKey = () => `mds_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;

const grpcPort = await freePort();
const stack = await Stack.start({
  env: { LOG_LEVEL: 'warn', INTERNAL_GRPC_TOKEN: randomBytes(24).toString('base64url') },
  services: [
    {
      name: 'client-registry',
      env: {
        KAFKA_TOPIC_PREFIX: 'bench-flood-registry.',
        GRPC_PORT: String(grpcPort),
        REGISTRY_ADMIN_TOKEN: ADMIN,
        REGISTRY_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      },
    },
    {
      name: 'gateway',
      env: {
        REGISTRY_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
        TRUST_PROXY: 'loopback',
        RATE_LIMIT_SEND_PER_KEY: '1000000',
        RATE_LIMIT_SEND_PER_COMPANY: '1000000',
      },
    },
  ],
});

async function lookups(): Promise<Record<string, number>> {
  const text = await (await fetch(`${stack.service('gateway').opsUrl}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^mds_gateway_api_key_lookups_total\{[^}]*answer="(\w+)"[^}]*\} (\d+)/gm)) {
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

/** Random keys at FLOOD_PER_SECOND until stopped; `address` gives each request's X-Forwarded-For. */
function flood(gateway: string, address: () => string) {
  const statuses = new Map<number, number>();
  let stopped = false;
  const perTick = FLOOD_PER_SECOND / 100;
  const timer = setInterval(() => {
    for (let i = 0; i < perTick; i++) {
      fetch(`${gateway}/api/v1/send`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': randomKey(),
          'x-forwarded-for': address(),
        },
        body,
      })
        .then(async (r) => {
          await r.arrayBuffer();
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        })
        .catch(() => statuses.set(0, (statuses.get(0) ?? 0) + 1));
    }
  }, 10);
  return {
    stop: () => {
      if (!stopped) clearInterval(timer);
      stopped = true;
      return Object.fromEntries(statuses);
    },
  };
}

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
  const company = await adminCall('/companies', { name: 'Flood bench' });
  const key = await adminCall(`/companies/${company.company_id}/api-keys`, { label: 'bench' });
  const gateway = stack.service('gateway').url;
  const real = async () => {
    const result = await autocannon({
      url: `${gateway}/api/v1/send`,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': key.api_key!,
        'x-forwarded-for': '198.51.100.1',
      },
      body,
      connections: 2,
      overallRate: 20,
      duration: DURATION_S,
    });
    return result;
  };
  await real(); // warm-up: JIT, connections, the key's cache entry

  console.log(
    `\nA real company's sends at 20/s for ${DURATION_S} s; flood of ${FLOOD_PER_SECOND} random keys/s\n`,
  );
  const phases: [string, (() => string) | undefined][] = [
    ['no flood', undefined],
    ['flood from one address', () => '203.0.113.9'],
    [
      'flood from 1,000 addresses',
      () => `10.${Math.floor(Math.random() * 4)}.${Math.floor(Math.random() * 250)}.1`,
    ],
  ];
  for (const [label, address] of phases) {
    const before = await lookups();
    const f = address ? flood(gateway, address) : undefined;
    const r = await real();
    const flooded = f?.stop();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = await lookups();
    const asked = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
    console.log(
      `${label.padEnd(28)} real: ${r.requests.total} sent, ${r['2xx']} accepted, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms` +
        `   flood answers ${JSON.stringify(flooded ?? {})}   registry lookups ${JSON.stringify(asked)}`,
    );
  }
} finally {
  await stack.stop();
}
