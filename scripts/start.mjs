// `npm start`: the whole stack on this machine. A real Kafka broker and PostgreSQL (kept in .run/dev
// between runs), every service that is built, each as its own process, and a demo company with an API
// key and two bots in the messenger simulator, whose webhook goes to the simulator's webhook inspector.
// It prints a five-minute walk-through (the README's Quick start says the same). Ctrl-C stops what this started, by process id, in
// reverse order, and nothing else. `npm start -- --fresh` first empties .run/dev (as `npm run reset`).
import { spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { runDir, startInfra, stopProcess } from '../packages/local-infra/dist/index.js';
import { emptyRunDir } from './run-dir.mjs';

const root = join(import.meta.dirname, '..');
const log = (line) => console.log(`[start] ${line}`);

/** `--brokers 3`: Kafka as production runs it, a cluster of three (every topic with 3 replicas, min ISR 2). */
function brokersAsked(argv) {
  const at = argv.indexOf('--brokers');
  if (at < 0) return 1;
  const count = Number(argv[at + 1]);
  if (!Number.isInteger(count) || count < 1 || count > 9) {
    log(
      `--brokers takes a number of Kafka brokers from 1 to 9 (3 is the production topology), not "${argv[at + 1] ?? ''}"`,
    );
    process.exit(2);
  }
  return count;
}
const brokerCount = brokersAsked(process.argv.slice(2));
const dev = runDir('dev');
if (process.argv.includes('--fresh')) {
  try {
    log(`--fresh: ${emptyRunDir(dev)}`);
  } catch (error) {
    log(`--fresh: ${error.message}`);
    process.exit(1);
  }
}
mkdirSync(join(dev, 'logs'), { recursive: true });

/** Secrets of the local stack, made once and kept, so what was sealed with them stays readable. */
function devSecrets() {
  const file = join(dev, 'secrets.json');
  const secrets = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  secrets.adminToken ??= randomBytes(24).toString('base64url');
  secrets.encryptionKeys ??= `dev1:${randomBytes(32).toString('base64')}`;
  secrets.internalGrpcToken ??= randomBytes(24).toString('base64url');
  // The dashboard's identity (an Ed25519 key pair, JWK "d" and "x"): the registry and the dispatcher let it act
  // for one company per call.
  if (!secrets.dashboardSigningKey) {
    const jwk = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
    secrets.dashboardSigningKey = jwk.d;
    secrets.dashboardPublicKey = jwk.x;
  }
  secrets.fingerprintKey ??= randomBytes(32).toString('base64url');
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return secrets;
}

const secrets = devSecrets();
const SIMULATOR = 'http://127.0.0.1:8090';
const REGISTRY = 'http://127.0.0.1:8081';
const GATEWAY = 'http://127.0.0.1:8080';
const DASHBOARD = 'http://127.0.0.1:8085';
/** The dashboard's operator API (mds-admin members ...): on loopback, apart from the public port. */
const DASHBOARD_OPERATOR = 'http://127.0.0.1:8086';
/** The demo company's webhook endpoint: the simulator's inspector, which verifies every delivery. */
const INSPECTOR = `${SIMULATOR}/inspector/demo`;
const INSPECTOR_HOOKS = `${INSPECTOR}/hooks`;
/** The simulator's whole world (bots, people, chats, the inspector's webhooks), kept between runs. */
const SIMULATOR_STATE = join(dev, 'messenger-simulator.sqlite');

/**
 * Every service in start order, with its local settings (`service`: its services/<dir> when not its name).
 * Each serves /readyz and /metrics on its port + 1000 (OPS_PORT), apart from its API, as the chart runs them.
 */
const SERVICES = [
  { name: 'messenger-simulator', port: 8090, env: { PUBLIC_URL: SIMULATOR, STATE_FILE: SIMULATOR_STATE } },
  {
    name: 'client-registry',
    port: 8081,
    env: {
      GRPC_PORT: '50051',
      REGISTRY_ADMIN_TOKEN: secrets.adminToken,
      DASHBOARD_PUBLIC_KEYS: secrets.dashboardPublicKey,
      REGISTRY_ENCRYPTION_KEYS: secrets.encryptionKeys,
      TELEGRAM_API_ROOT: SIMULATOR,
      MAX_API_BASE: SIMULATOR,
    },
  },
  // The one sender service (services/sender), once per messenger, under its deployment's name.
  {
    name: 'telegram-sender',
    service: 'sender',
    port: 8082,
    // New bots (the demo's on a first start) are polled within 2 s rather than 30.
    env: {
      MESSENGER: 'telegram',
      REGISTRY_GRPC_ADDRESS: '127.0.0.1:50051',
      MESSENGER_API_BASE: SIMULATOR,
      BOTS_REFRESH_MS: '2000',
    },
  },
  {
    name: 'max-sender',
    service: 'sender',
    port: 8083,
    env: {
      MESSENGER: 'max',
      REGISTRY_GRPC_ADDRESS: '127.0.0.1:50051',
      MESSENGER_API_BASE: SIMULATOR,
      BOTS_REFRESH_MS: '2000',
    },
  },
  {
    name: 'webhook-dispatcher',
    port: 8084,
    env: {
      REGISTRY_GRPC_ADDRESS: '127.0.0.1:50051',
      DISPATCHER_ADMIN_TOKEN: secrets.adminToken,
      DASHBOARD_PUBLIC_KEYS: secrets.dashboardPublicKey,
      // Local receivers (a webhook.site-like tool on this machine) are allowed; everything private stays refused.
      WEBHOOK_SSRF_ALLOWLIST: '127.0.0.1/32,::1/128,localhost',
    },
  },
  {
    name: 'gateway',
    port: 8080,
    env: {
      REGISTRY_GRPC_ADDRESS: '127.0.0.1:50051',
      IDEMPOTENCY_FINGERPRINT_KEYS: secrets.fingerprintKey,
      // The dashboard sends as the signed-in member with its assertion, no API key pasted.
      DASHBOARD_PUBLIC_KEYS: secrets.dashboardPublicKey,
    },
  },
  {
    name: 'dashboard',
    port: 8085,
    env: {
      REGISTRY_URL: REGISTRY,
      DISPATCHER_URL: 'http://127.0.0.1:8084',
      DASHBOARD_SIGNING_KEY: secrets.dashboardSigningKey,
      OPERATOR_PORT: '8086',
      GATEWAY_URL: GATEWAY,
      DASHBOARD_ADMIN_TOKEN: secrets.adminToken,
      PUBLIC_URL: DASHBOARD,
    },
  },
];

/** Whether something already listens on a local port (then a service of ours could not bind it). */
const inUse = (port) =>
  new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
const busy = [];
for (const port of [...SERVICES.flatMap((s) => [s.port, s.port + 1000]), 50051, 8086])
  if (await inUse(port)) busy.push(port);
if (busy.length) {
  log(`127.0.0.1 port ${busy.join(', ')} already in use: is npm start running elsewhere? Stop it first.`);
  process.exit(1);
}

const began = Date.now();
const infra = await startInfra({
  name: 'dev',
  kafkaPort: Number(process.env.MDS_KAFKA_PORT ?? 9092),
  postgresPort: Number(process.env.MDS_PG_PORT ?? 54329),
  brokerCount,
  log,
}).catch((error) => {
  // What went wrong and what to do about it (a run folder of another Kafka version, no Java, ...), not a stack.
  log(error.message);
  process.exit(1);
});
log(`infrastructure ready in ${((Date.now() - began) / 1000).toFixed(1)} s`);
log(`  KAFKA_BROKERS=${infra.kafkaBrokers}`);
log(`  DATABASE_URL=${infra.databaseUrl}`);

const running = [];
let stopping = false;

async function stopAll(signal, code = 0) {
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
  process.exit(code);
}
process.on('SIGINT', () => void stopAll('SIGINT'));
process.on('SIGTERM', () => void stopAll('SIGTERM'));

async function ready(url, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) })).ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

for (const service of SERVICES) {
  const entry = join(root, 'services', service.service ?? service.name, 'dist', 'main.js');
  if (!existsSync(entry)) continue;
  const logFile = join(dev, 'logs', `${service.name}.log`);
  const out = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(process.execPath, [entry], {
    env: {
      ...process.env,
      KAFKA_BROKERS: infra.kafkaBrokers,
      DATABASE_URL: infra.databaseUrl,
      HTTP_PORT: String(service.port),
      OPS_PORT: String(service.port + 1000),
      HTTP_HOST: '127.0.0.1',
      INTERNAL_GRPC_TOKEN: secrets.internalGrpcToken,
      // Topics the services create get as many replicas as the cluster allows (3 at most; min ISR 2 then).
      KAFKA_REPLICATION_FACTOR: String(Math.min(3, brokerCount)),
      ...service.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  running.push({ ...service, child });
  child.on('exit', (code, signal) => {
    if (!stopping) log(`${service.name} exited (${signal ?? code}); see ${logFile}`);
  });
  if (!(await ready(`http://127.0.0.1:${service.port + 1000}`))) {
    log(`${service.name} did not become ready; see ${logFile}`);
    await stopAll('start-up failure', 1);
  }
  log(
    `${service.name} ready on http://127.0.0.1:${service.port} (ops: ${service.port + 1000}, pid ${child.pid}), log ${logFile}`,
  );
}

const has = (name) => running.some((s) => s.name === name);
if (has('client-registry') && has('gateway')) {
  let demo;
  try {
    demo = await ensureDemo();
  } catch (error) {
    log(`could not set up the demo company: ${error.message}`);
    await stopAll('demo set-up failure', 1);
  }
  const login = has('dashboard')
    ? await ensureDemoLogin(demo).catch((error) => log(`demo login: ${error.message}`))
    : undefined;
  console.log(`
  The stack is running.
${login ? `\n  Dashboard:          ${DASHBOARD}   (sign in as ${login.email} / ${login.password})\n` : ''}
  Gateway:            ${GATEWAY}   (API docs: ${GATEWAY}/api/v1/docs)
  Demo API key:       ${demo.apiKey}
  Demo company:       ${demo.companyId}
  Admin API:          ${REGISTRY}/admin/v1   (Authorization: Bearer ${secrets.adminToken})
  Dashboard operator: ${DASHBOARD_OPERATOR}/admin/v1   (same token; mds-admin members: DASHBOARD_URL=${DASHBOARD_OPERATOR})
${has('webhook-dispatcher') ? `  Webhook deliveries: http://127.0.0.1:8084/admin/v1/deliveries/<event_id>   (same token)\n` : ''}${has('messenger-simulator') ? `  Simulator inbox:    ${SIMULATOR}/   (bots: ${demo.bots.map((b) => `${b.messenger} @${b.username} id ${b.simulatorId}`).join(', ')})\n` : ''}${demo.webhookUrl ? `  Demo webhooks:      ${demo.webhookUrl === INSPECTOR_HOOKS ? `${INSPECTOR}   (the inspector: each delivery and whether its signature verifies)` : demo.webhookUrl}\n` : ''}
${has('messenger-simulator') ? walkThrough(demo) : ''}`);
} else if (running.length === 0) {
  log('no service is built yet: only the infrastructure runs');
}
log('running; Ctrl-C stops everything started here');
setInterval(() => undefined, 1 << 30);

/** The demo company, its API key and (with the simulator) one Telegram and one MAX bot; made once, reused after. */
async function ensureDemo() {
  const file = join(dev, 'demo.json');
  const admin = async (method, path, body) => {
    const response = await fetch(`${REGISTRY}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${secrets.adminToken}`, 'content-type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${await response.text()}`);
    return response.status === 204 ? {} : response.json();
  };
  let demo = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
  if (!demo) {
    const company = await admin('POST', '/companies', { name: 'Demo company' });
    const key = await admin('POST', `/companies/${company.company_id}/api-keys`, {
      label: 'demo',
      // The local demo key may do everything, change_phone included.
      scopes: ['send', 'check', 'change_phone', 'read'],
    });
    demo = {
      companyId: company.company_id,
      apiKey: key.api_key,
      bots: [
        {
          messenger: 'telegram',
          name: 'demo_shop',
          username: 'demo_shop_bot',
          token: `7000000001:${randomBytes(26).toString('base64url').slice(0, 35)}`,
        },
        {
          messenger: 'max',
          name: 'demo_max',
          username: 'demo_max_bot',
          token: randomBytes(24).toString('base64url'),
        },
      ],
    };
    writeFileSync(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
  }
  if (has('messenger-simulator')) {
    // The simulator keeps its bots in .run/dev; it lacks the demo bots only on a first start (or once its
    // state file went on its own): then it gets them, with their tokens.
    const registered = await admin('GET', `/companies/${demo.companyId}/bots`);
    const simulated = (await (await fetch(`${SIMULATOR}/control/bots`)).json()).bots;
    for (const bot of demo.bots) {
      let kept = simulated.find((b) => b.token === bot.token);
      if (!kept) {
        const created = await fetch(`${SIMULATOR}/control/bots`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            messenger: bot.messenger,
            username: bot.username,
            name: bot.name,
            token: bot.token,
          }),
        });
        if (!created.ok)
          throw new Error(`simulator bot @${bot.username}: ${created.status} ${await created.text()}`);
        kept = await created.json();
      }
      bot.simulatorId = kept.id;
      if (!registered.bots.some((b) => b.name === bot.name && b.messenger === bot.messenger)) {
        await admin('POST', `/companies/${demo.companyId}/bots`, {
          messenger: bot.messenger,
          name: bot.name,
          token: bot.token,
          default: true,
        });
      }
    }
  }
  const company = await admin('GET', `/companies/${demo.companyId}`);
  if (has('messenger-simulator') && !company.webhook) {
    await admin('PUT', `/companies/${demo.companyId}/webhook`, { url: INSPECTOR_HOOKS });
  }
  const webhookUrl = company.webhook?.url ?? (has('messenger-simulator') ? INSPECTOR_HOOKS : undefined);
  if (webhookUrl === INSPECTOR_HOOKS) {
    // The inspector keeps the company's signing secrets, but they may have been rotated meanwhile.
    const { secrets: signing } = await admin('GET', `/companies/${demo.companyId}/webhook/secrets`);
    const registered = await fetch(`${SIMULATOR}/control/inspector/demo`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ secrets: signing.map((s) => s.secret) }),
    });
    if (!registered.ok) throw new Error(`inspector secrets: ${registered.status} ${await registered.text()}`);
  }
  return { ...demo, webhookUrl };
}

/**
 * The demo company's owner in the dashboard, made the way an operator makes one (the dashboard's operator API,
 * what `mds-admin members add` calls), with a password set through the one-time link; kept in demo.json.
 */
async function ensureDemoLogin(demo) {
  const file = join(dev, 'demo.json');
  if (demo.login) return demo.login;
  const email = 'owner@demo.test';
  const operator = (path, body) =>
    fetch(`${DASHBOARD_OPERATOR}/admin/v1/companies/${demo.companyId}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secrets.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  let answer = await operator('/members', { email, role: 'owner', name: 'Demo owner' });
  // Made by an earlier run whose password was not kept: a reset link sets a new one.
  if (answer.status === 409) answer = await operator('/members/reset', { email });
  if (!answer.ok) throw new Error(`${answer.status} ${await answer.text()}`);
  const { link } = await answer.json();
  const password = randomBytes(12).toString('base64url');
  const redeemed = await fetch(`${DASHBOARD}/api/links/redeem`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: link.split('#')[1], password }),
  });
  if (!redeemed.ok) throw new Error(`${redeemed.status} ${await redeemed.text()}`);
  const stored = JSON.parse(readFileSync(file, 'utf8'));
  stored.login = { email, password };
  writeFileSync(file, JSON.stringify(stored, null, 2), { mode: 0o600 });
  return stored.login;
}

/** The five-minute tour: a person links both bots, then check, send to each messenger, and where to look. */
function walkThrough(demo) {
  const [telegram, max] = ['telegram', 'max'].map((m) => demo.bots.find((b) => b.messenger === m));
  const send = (service) =>
    `curl -s $G/api/v1/send -H "$K" -H "$J" -d '{"phone_number": "79123456789", "service": "${service}",
         "text": "Your order has shipped", "buttons": [{"text": "Track it", "url": "https://example.com/track"}]}'; echo`;
  return `  Try it (paste each step into a shell):

  0. S=${SIMULATOR} G=${GATEWAY} J='Content-Type: application/json' K='X-API-Key: ${demo.apiKey}'

  1. A simulated person starts both bots and shares their phone number (or click it in the inbox);
     once: the simulator keeps Ivan and his chats in .run/dev across restarts:
       curl -s $S/control/people -H "$J" -d '{"phone_number": "79123456789", "first_name": "Ivan"}'; echo
       for bot in ${telegram.simulatorId} ${max.simulatorId}; do for action in start share_contact; do
         curl -s $S/control/people/1/actions -H "$J" -d '{"action": "'$action'", "bot_id": '$bot'}'; echo
       done; done

  2. Ask whether the service knows them; the answer comes as a client.check webhook (step 4):
       curl -s $G/api/v1/client/check -H "$K" -H "$J" -d '{"phone_number": "79123456789"}'; echo

  3. Send a message with a link button, through Telegram and through MAX:
       ${send('telegram')}
       ${send('max')}

  4. See the message with its button in both of the person's chats:  ${SIMULATOR}/
     and the signed webhooks, each verified: client.check with "exists": true, then message.status
     with "state": "sent" for each send:  ${demo.webhookUrl === INSPECTOR_HOOKS ? INSPECTOR : '(the demo webhook URL above)'}
       curl -s $S/control/inspector/demo/webhooks   # the same as JSON
`;
}
