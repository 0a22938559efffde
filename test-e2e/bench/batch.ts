// npm run bench:batch (test-e2e; `npm run bench` runs it after the pipeline): the gateway's CPU per message of
// one POST /api/v1/send/batch of 500 messages beside 500 single POST /api/v1/send, through the real stack
// (simulator, client-registry, both senders, dispatcher, gateway as processes on the run's broker and
// PostgreSQL). Every message carries an Idempotency-Key (the SDK's default), and goes to a number no one linked,
// so it ends `failed` CLIENT_NOT_FOUND at the registry at once: the run measures the gateway, not the bots' rate
// limits. Rounds alternate (single, batch) BENCH_BATCH_ROUNDS times (3); each is measured twice from the
// gateway's /proc ticks (10 ms each): until the last 202, and until the last webhook (all the gateway does for
// the messages, its read model's folding included). CPU time per message is the figure least moved by other
// load on a shared machine, but on 2 shared cores it still moves; the ratio is what to read.
import { randomUUID } from 'node:crypto';
import { startDeliveryStack, uniquePhone } from '../src/sandbox.js';
import { inParallel } from '../src/pipeline/audience.js';
import { ProcessSampler } from './processes.js';

const SIZE = 500;
const ROUNDS = Number(process.env.BENCH_BATCH_ROUNDS ?? '3');
/** Single sends in flight at once: a client that sends 500 messages as fast as the gateway answers. */
const CONCURRENCY = 32;

process.env.E2E_LOG_LEVEL ??= 'warn';
const { stack, sandbox } = await startDeliveryStack({
  without: ['dashboard'],
  env: { gateway: { RATE_LIMIT_SEND_PER_KEY: '1000000', RATE_LIMIT_SEND_PER_COMPANY: '1000000' } },
});

type Mode = 'single' | 'batch';
const totals = { single: { accept: 0, all: 0, n: 0 }, batch: { accept: 0, all: 0, n: 0 } };

try {
  const company = await sandbox.companyWithWebhooks('Batch bench');
  const sampler = new ProcessSampler([{ name: 'gateway', pid: stack.service('gateway').pid! }]);
  const ms = (a: ReturnType<ProcessSampler['sample']>, b: ReturnType<ProcessSampler['sample']>) =>
    (b.ticks.get('gateway')! - a.ticks.get('gateway')!) * 10;
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await sandbox.api(company.apiKey, path, body, headers);
    if (response.status !== 202) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const messages = () =>
    Array.from({ length: SIZE }, (_, n) => ({
      phone_number: uniquePhone(),
      service: 'telegram',
      text: `Your order ${n} is ready for pickup`,
      idempotency_key: randomUUID(),
    }));
  const send: Record<Mode, (items: ReturnType<typeof messages>) => Promise<string[]>> = {
    single: (items) =>
      inParallel(items, CONCURRENCY, async ({ idempotency_key: key, ...body }) => {
        const answer = (await post('/send', body, { 'idempotency-key': key })) as { event_id: string };
        return answer.event_id;
      }),
    batch: async (items) => {
      const { results } = (await post('/send/batch', { messages: items })) as {
        results: { status: string; event_id?: string }[];
      };
      if (results.some((r) => r.status !== 'accepted'))
        throw new Error('a message of the batch was rejected');
      return results.map((r) => r.event_id!);
    },
  };

  async function round(mode: Mode, warmup = false) {
    const items = messages();
    const t0 = performance.now();
    const before = sampler.sample();
    const ids = await send[mode](items);
    const answered = sampler.sample();
    const acceptS = (performance.now() - t0) / 1000;
    for (;;) {
      if (ids.every((id) => company.webhooks.about(id).length > 0)) break;
      if (performance.now() - t0 > 120_000) throw new Error(`${mode}: webhooks missing after 120 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const settled = sampler.sample();
    if (warmup) return;
    const accept = ms(before, answered);
    const all = ms(before, settled);
    totals[mode].accept += accept;
    totals[mode].all += all;
    totals[mode].n += SIZE;
    console.log(
      `  ${mode.padEnd(6)} 500 accepted in ${acceptS.toFixed(2)} s; gateway CPU per message ${(accept / SIZE).toFixed(3)} ms until the 202s, ${(all / SIZE).toFixed(3)} ms until the webhooks`,
    );
  }

  console.log(
    `gateway CPU: 500 single sends (${CONCURRENCY} in flight) vs one batch of 500, ${ROUNDS} rounds`,
  );
  // One request first, so the gateway knows the new key as good: 32 first requests at once with a key it has not
  // seen yet would each be looked up, and charged to the address as guesses are.
  await post('/send', { phone_number: uniquePhone(), service: 'telegram', text: 'Hello' });
  await round('single', true);
  await round('batch', true);
  for (let r = 0; r < ROUNDS; r++) {
    await round('single');
    await round('batch');
  }
  const per = (mode: Mode, what: 'accept' | 'all') => totals[mode][what] / totals[mode].n;
  for (const what of ['accept', 'all'] as const) {
    const label = what === 'accept' ? 'until the 202s' : 'until the webhooks';
    console.log(
      `  ${label.padEnd(18)}: single ${per('single', what).toFixed(3)} ms/message, batch ${per('batch', what).toFixed(3)} ms/message; batch / single = ${(per('batch', what) / per('single', what)).toFixed(2)}`,
    );
  }
  if (per('batch', 'accept') >= per('single', 'accept')) {
    console.error('a batch cost the gateway no less CPU per message than single sends');
    process.exitCode = 1;
  }
} finally {
  await sandbox.close();
  await stack.stop();
}
