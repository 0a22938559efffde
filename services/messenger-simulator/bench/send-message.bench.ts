// `npm run bench`: how many sendMessage calls per second the simulator serves, so it is never the
// bottleneck of our benchmarks (target: at least 5,000/s). The simulator runs in this process on
// 127.0.0.1 with rate limits off and its access log on (written to nowhere); autocannon drives it from
// a worker thread. The last rows repeat sends with STATE_FILE (as `npm start` runs it: every answer
// waits for its fsynced save). Bounded: a few 10-second runs, loopback only.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import autocannon, { type Request, type Result } from 'autocannon';
import { createLogger } from '@mds/logging';
import { loadSimulatorConfig } from '../src/config.js';
import { startSimulatorServer } from '../src/server.js';

const PEOPLE = 1000;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const TARGET = 5000;

const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
// `info` keeps the access log line of every call, as a deployed simulator writes it; the last run
// repeats one at `warn` (LOG_LEVEL=warn), what a load-test deployment would use.
const logLevel = process.env.BENCH_LOG_LEVEL ?? 'info';
const logger = createLogger({ service: 'messenger-simulator', level: logLevel, destination: discard });
const settings = { HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', RATE_LIMITS_ENABLED: 'false' };

/** A simulator with a Telegram and a MAX bot that PEOPLE people started, and a send to each of them. */
async function benchSimulator(env: Record<string, string> = {}) {
  const server = await startSimulatorServer({ config: loadSimulatorConfig({ ...settings, ...env }), logger });
  const { world } = server.simulator;
  const tg = world.createBot({ messenger: 'telegram', username: 'bench_bot', name: 'Bench' });
  const max = world.createBot({ messenger: 'max', username: 'bench', name: 'Bench' });
  if (!('token' in tg) || !('token' in max)) throw new Error('could not create the bench bots');
  const telegramChats: number[] = [];
  const maxUsers: number[] = [];
  for (let i = 0; i < PEOPLE; i++) {
    const person = world.createPerson({ phone: `7900${String(i).padStart(7, '0')}`, firstName: `P${i}` });
    if (!('id' in person)) throw new Error(person.message);
    world.act(person, tg, { type: 'start' });
    world.act(person, max, { type: 'start' });
    telegramChats.push(person.telegramUserId);
    maxUsers.push(person.maxUserId);
  }
  const keyboard = { inline_keyboard: [[{ text: 'Track order', url: 'https://shop.example/track/1' }]] };
  const telegramRequests: Request[] = telegramChats.map((chatId) => ({
    method: 'POST',
    path: `/bot${tg.token}/sendMessage`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chat_id: chatId, text: 'Your order has shipped', reply_markup: keyboard }),
  }));
  const maxRequests: Request[] = maxUsers.map((userId) => ({
    method: 'POST',
    path: `/messages?user_id=${userId}`,
    headers: { 'content-type': 'application/json', authorization: max.token },
    body: JSON.stringify({
      text: 'Your order has shipped',
      attachments: [
        {
          type: 'inline_keyboard',
          payload: {
            buttons: [[{ type: 'link', text: 'Track order', url: 'https://shop.example/track/1' }]],
          },
        },
      ],
    }),
  }));
  return { server, telegramRequests, maxRequests };
}

const { server, telegramRequests, maxRequests } = await benchSimulator();

/**
 * One autocannon run. Also measures how busy the simulator's event loop (this thread; autocannon runs
 * in a worker) was: on a 2-core machine the load generator takes the other core, so a loop that is not
 * 100% busy means the client, not the simulator, set the pace.
 */
async function run(requests: Request[], connections: number, duration: number, url = server.url) {
  const before = performance.eventLoopUtilization();
  const result = await autocannon({ url, connections, duration, workers: 1, requests });
  const busy = performance.eventLoopUtilization(before).utilization;
  return { result, busy };
}

interface Row {
  api: string;
  connections: number;
  'req/s': number;
  'p50 ms': number;
  'p99 ms': number;
  errors: number;
  'non-2xx': number;
  'simulator busy %': number;
  'req/s at 100% busy': number;
}

function row(api: string, connections: number, { result: r, busy }: { result: Result; busy: number }): Row {
  return {
    api,
    connections,
    'req/s': Math.round(r.requests.average),
    'p50 ms': r.latency.p50,
    'p99 ms': r.latency.p99,
    errors: r.errors + r.timeouts,
    'non-2xx': r.non2xx,
    'simulator busy %': Math.round(busy * 100),
    'req/s at 100% busy': Math.round(r.requests.average / busy),
  };
}

console.log(
  `messenger-simulator bench: ${PEOPLE} started chats per bot, ${DURATION_S} s per run, rate limits off, log level ${logLevel} (last row: warn)`,
);
await run(telegramRequests, 20, 2); // warm-up (JIT), not reported
const rows: Row[] = [];
for (const connections of [10, 50, 100]) {
  rows.push(row('telegram sendMessage', connections, await run(telegramRequests, connections, DURATION_S)));
}
rows.push(row('max POST /messages', 50, await run(maxRequests, 50, DURATION_S)));
logger.level = 'warn';
rows.push(row('telegram sendMessage, LOG_LEVEL=warn', 50, await run(telegramRequests, 50, DURATION_S)));
await server.close();

// With STATE_FILE every answer waits for its own save (a pass over 2 bots, 1000 people and 2000 chats,
// then one fsynced SQLite transaction).
logger.level = logLevel;
const stateDir = mkdtempSync(join(tmpdir(), 'simulator-bench-'));
const stateFile = join(stateDir, 'state.sqlite');
const persisted = await benchSimulator({ STATE_FILE: stateFile });
const at = persisted.server.url;
await run(persisted.telegramRequests, 20, 2, at); // warm-up; its first call saves the whole population
rows.push(
  row('telegram sendMessage, STATE_FILE', 10, await run(persisted.telegramRequests, 10, DURATION_S, at)),
);
rows.push(
  row('telegram sendMessage, STATE_FILE', 50, await run(persisted.telegramRequests, 50, DURATION_S, at)),
);
rows.push(row('max POST /messages, STATE_FILE', 50, await run(persisted.maxRequests, 50, DURATION_S, at)));
await persisted.server.close();
const stateBytes = statSync(stateFile).size;
rmSync(stateDir, { recursive: true, force: true });
console.table(rows);
console.log(`state file after the STATE_FILE runs: ${(stateBytes / 1024 / 1024).toFixed(1)} MB`);

const best = Math.max(...rows.filter((r) => r.api === 'telegram sendMessage').map((r) => r['req/s']));
const failed = rows.some((r) => r.errors > 0 || r['non-2xx'] > 0);
console.log(
  `telegram sendMessage: best ${best} req/s (target ${TARGET}: ${best >= TARGET ? 'met' : 'NOT met'})` +
    (failed ? '; some calls failed, see the table' : '; every call answered 200'),
);
