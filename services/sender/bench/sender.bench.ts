// npm run bench (sender, MESSENGER=telegram): messages per second through the sender against the messenger simulator
// enforcing Telegram's limits (30 messages/s per bot, 1/s per chat), the 429s it got, and the sender's
// memory. One bot for BENCH_SENDER_ONE_BOT_S seconds (default 60), then BENCH_SENDER_BOTS bots at once
// (default 50) for BENCH_SENDER_MANY_S seconds (default 20), each after a 5 s warm-up. Loopback only,
// bounded.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { deliveryTopic, messengerNamed } from '@mds/contracts';
import { createEventPublisher, createKafkaClient } from '@mds/kafka';
import { freePort } from '@mds/local-infra';
import { createLogger } from '@mds/logging';
import { deliveryRequest } from '../src/test-support/stack.js';
import { senderService, simulatorAndRegistry, Stack } from '@mds/testkit';

const ONE_BOT_S = Number(process.env.BENCH_SENDER_ONE_BOT_S ?? 60);
const BOTS = Number(process.env.BENCH_SENDER_BOTS ?? 50);
const MANY_S = Number(process.env.BENCH_SENDER_MANY_S ?? 20);
const WARM_UP_S = 5; // left out of the measured window
const PEOPLE = 40; // per bot: at 1 message/s per chat, 40 chats keep a bot's 30/s busy
const ADMIN = 'bench-admin-token-0123456789';
const logger = createLogger({ service: 'sender-bench', level: 'silent' });

const grpcPort = await freePort();
const stack = await Stack.start({
  env: { LOG_LEVEL: 'warn', INTERNAL_GRPC_TOKEN: randomBytes(24).toString('base64url') },
  services: [
    ...simulatorAndRegistry({ grpcPort, adminToken: ADMIN }),
    senderService(messengerNamed('telegram')!, (ports) => ({
      REGISTRY_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
      MESSENGER_API_BASE: `http://127.0.0.1:${ports['messenger-simulator']}`,
      UPDATES_MODE: 'off',
      ...(process.env.BENCH_PROFILE_DIR
        ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}` }
        : {}),
    })),
  ],
});

const sim = stack.service('messenger-simulator').url;
const registry = stack.service('client-registry').url;
const sender = stack.service('telegram-sender');
const brokers = stack.infra.kafkaBrokers.split(',');
const publisher = createEventPublisher({
  kafka: createKafkaClient({ brokers, clientId: 'sender-bench' }, logger),
  logger,
  topicPrefix: stack.topicPrefix,
  maxBatchRecords: 2_000,
});
await publisher.connect();

async function call<T>(base: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

const { company_id: companyId } = await call<{ company_id: string }>(
  registry,
  'POST',
  '/admin/v1/companies',
  {
    name: 'Bench',
  },
);

async function createBots(count: number) {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const simBot = await call<{ id: number; token: string }>(sim, 'POST', '/control/bots', {
        messenger: 'telegram',
        username: `bench_${randomBytes(4).toString('hex')}_bot`,
      });
      const { bot_id } = await call<{ bot_id: string }>(
        registry,
        'POST',
        `/admin/v1/companies/${companyId}/bots`,
        {
          messenger: 'telegram',
          name: `b${randomBytes(4).toString('hex')}`,
          token: simBot.token,
        },
      );
      return { simId: simBot.id, botId: bot_id };
    }),
  );
}

let phone = 5_000_000;
const people = await Promise.all(
  Array.from({ length: PEOPLE }, () =>
    call<{ id: number; telegram_user_id: number }>(sim, 'POST', '/control/people', {
      phone_number: `7916${String(phone++).padStart(7, '0')}`,
      first_name: 'Bench',
    }),
  ),
);

async function startBots(bots: { simId: number }[]) {
  for (const bot of bots)
    await Promise.all(
      people.map((p) =>
        call(sim, 'POST', `/control/people/${p.id}/actions`, { action: 'start', bot_id: bot.simId }),
      ),
    );
}

async function too429(): Promise<number> {
  const text = await (await fetch(`${stack.service('messenger-simulator').opsUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('mds_simulator_api_calls_total') && l.includes('status="429"'))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

/** Messages the simulator took (sendMessage answered 200): what people received, whatever the sender reports. */
async function delivered(): Promise<number> {
  const text = await (await fetch(`${stack.service('messenger-simulator').opsUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter(
      (l) =>
        l.startsWith('mds_simulator_api_calls_total') &&
        l.includes('method="sendMessage"') &&
        l.includes('status="200"'),
    )
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

async function outcomeCounts(): Promise<{ sent: number; failed: number }> {
  const text = await (await fetch(`${sender.opsUrl}/metrics`)).text();
  let sent = 0;
  let failed = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('mds_sender_outcomes_total{')) continue;
    const value = Number(line.split(' ').at(-1));
    if (line.includes('outcome="sent"')) sent += value;
    else failed += value;
  }
  return { sent, failed };
}

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

/** Publishes `seconds` worth of work for each bot (a little more), and measures the steady window. */
async function run(label: string, bots: { botId: string }[], seconds: number) {
  // Work for the measured window, the warm-up and a margin: the window must never run out of work (a window
  // that outlasted it once showed as a "stall" of the last seconds).
  const perBot = Math.ceil(30 * (seconds + WARM_UP_S + 10));
  const before429 = await too429();
  for (let i = 0; i < perBot; i += 200) {
    const events = bots.flatMap((bot) =>
      Array.from({ length: Math.min(200, perBot - i) }, (_, j) => {
        const person = people[(i + j) % PEOPLE]!;
        const chatId = String(person.telegram_user_id);
        const record = deliveryRequest(
          companyId,
          { messenger: 1, botId: bot.botId, chatId, userId: chatId },
          { deadlineMs: 3_600_000 },
        );
        return { topic: deliveryTopic('telegram'), key: bot.botId, record };
      }),
    );
    await publisher.publish(events, { timeoutMs: 60_000 });
  }
  // Counted from the sender's own metrics, once a second: the benchmark reads no events itself, so
  // the cores stay with the sender, the simulator and the broker.
  const rss: number[] = [];
  const before = await outcomeCounts();
  let first: number | undefined;
  const samples: { at: number; sent: number; received: number }[] = [];
  const receivedBefore = await delivered();
  const deadline = Date.now() + (seconds + WARM_UP_S + 30) * 1000;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1_000));
    const now = await outcomeCounts();
    rss.push(rssMb(sender.pid!));
    samples.push({
      at: Date.now(),
      sent: now.sent - before.sent,
      received: (await delivered()) - receivedBefore,
    });
    if (first === undefined && now.sent > before.sent) first = Date.now();
    if (first !== undefined && Date.now() >= first + (WARM_UP_S + seconds) * 1000 + 1_000) break;
  }
  if (first === undefined) throw new Error('nothing was sent');
  const inWindow = samples.filter((x) => x.at >= first + WARM_UP_S * 1000);
  const window = inWindow.slice(0, seconds + 1);
  const windowSent = window.at(-1)!.sent - window[0]!.sent;
  const windowSeconds = (window.at(-1)!.at - window[0]!.at) / 1000;
  // Per second of the window, scaled to the sampling interval (a sample may come a little late).
  const rate = (x: (typeof window)[number], i: number, of: 'sent' | 'received') =>
    Math.round(((x[of] - window[i]![of]) * 1000) / (x.at - window[i]!.at));
  const perSecond = window.slice(1).map((x, i) => rate(x, i, 'sent'));
  const receivedPerSecond = window.slice(1).map((x, i) => rate(x, i, 'received'));
  const failed = (await outcomeCounts()).failed - before.failed;
  const after429 = await too429();
  console.log(
    `${label.padEnd(22)} ${(windowSent / windowSeconds).toFixed(1).padStart(8)} messages/s over ${windowSeconds.toFixed(0)} s` +
      `   slowest second ${Math.min(...perSecond)}   per bot ${(windowSent / windowSeconds / bots.length).toFixed(2)}/s` +
      `   429s ${after429 - before429}   failed ${failed}   sender RSS max ${Math.max(...rss).toFixed(0)} MB`,
  );
  console.log(
    `${''.padEnd(22)} per second: outcomes ${perSecond.join(' ')}\n${''.padEnd(22)} per second: received by people ${receivedPerSecond.join(' ')} (slowest ${Math.min(...receivedPerSecond)})`,
  );
}

try {
  console.log(`telegram-sender against the simulator (30 msg/s per bot, 1 msg/s per chat enforced)`);
  const [one] = await createBots(1);
  await startBots([one!]);
  await run('1 bot', [one!], ONE_BOT_S);
  const many = await createBots(BOTS);
  await startBots(many);
  await run(`${BOTS} bots at once`, many, MANY_S);
} finally {
  await publisher.disconnect();
  await stack.stop();
}
