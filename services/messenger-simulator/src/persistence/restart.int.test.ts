// The simulator with STATE_FILE over real HTTP: stopped and started again (in-process, and as a process
// killed with SIGKILL), it answers as if it had never stopped.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '@mds/logging';
import { loadSimulatorConfig } from '../config.js';
import { startSimulatorServer } from '../server.js';
import {
  ControlClient,
  deliver,
  getJson,
  newSecret,
  postJson,
  reachablePerson,
  statusBody,
  webhookReceiver,
  type BotView,
  type PersonView,
} from '../../test/simulator.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'simulator-restart-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function startOn(file: string) {
  const server = await startSimulatorServer({
    config: loadSimulatorConfig({
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      STATE_FILE: file,
      WEBHOOK_RETRY_DELAYS_MS: '50',
    }),
    logger: createLogger({ service: 'test', level: 'silent' }),
  });
  return { base: server.url, control: new ControlClient(server.url), close: () => server.close() };
}

/** What the control API shows of everything, but for URLs (the port changes with a restart). */
async function shown(control: ControlClient) {
  const { bots } = await control.call<{ bots: (BotView & { api_root?: string })[] }>('GET', '/bots');
  const { people } = await control.call<{ people: PersonView[] }>('GET', '/people');
  return {
    bots: bots.map(({ api_root: _root, ...bot }) => bot),
    people,
    messages: await Promise.all(people.map((p) => control.messages(p.id))),
    faults: await control.call('GET', '/faults'),
    inspector: await control
      .call<{ secrets: number; latest_seq: number }>('GET', '/inspector/demo')
      .then(({ secrets, latest_seq }) => ({ secrets, latest_seq })),
    webhooks: await control.call('GET', '/inspector/demo/webhooks'),
  };
}

const updateIds = (body: Record<string, unknown>) =>
  (body.result as { update_id: number }[]).map((u) => u.update_id);

describe('a simulator with a state file, started again', () => {
  it('has its bots, people, chats, queues, webhooks, faults and inspector, and goes on from there', async () => {
    const file = join(dir, 'state.sqlite');
    const hooks = await webhookReceiver();
    let sim = await startOn(file);
    try {
      const tg = await sim.control.createBot('telegram', 'shop_bot');
      const max = await sim.control.createBot('max', 'shop');
      const ivan = await reachablePerson(sim.control, tg, '79123456789');
      await sim.control.act(ivan.id, { action: 'start', bot_id: max.id });
      const pending = updateIds((await getJson(`${sim.base}/bot${tg.token}/getUpdates`)).body);
      expect(pending).toHaveLength(2);
      // The offset confirms the first update; the second stays pending.
      await getJson(`${sim.base}/bot${tg.token}/getUpdates?offset=${pending[1]}`);
      const maxPoll = await getJson(`${sim.base}/updates?timeout=0`, { Authorization: max.token });
      expect(maxPoll.body.updates).toHaveLength(1);
      const sent = await postJson(`${sim.base}/bot${tg.token}/sendMessage`, {
        chat_id: ivan.telegram_user_id,
        text: 'Your order has shipped',
        reply_markup: { inline_keyboard: [[{ text: 'Track it', url: 'https://example.com/track' }]] },
      });
      expect(sent.status).toBe(200);
      await sim.control.addFault({ kind: '5xx', bot_id: tg.id, method: 'getMe', count: 2 });
      expect(
        (await postJson(`${sim.base}/subscriptions`, { url: hooks.url }, { Authorization: max.token }))
          .status,
      ).toBe(200);
      const secret = newSecret();
      await sim.control.call('PUT', '/inspector/demo', { secrets: [secret] });
      await deliver(sim, 'demo', statusBody(), [secret]);
      await deliver(sim, 'demo', statusBody('failed'), []);
      const before = await shown(sim.control);

      await sim.close();
      sim = await startOn(file);

      expect(await shown(sim.control)).toEqual(before);
      // Telegram: the unconfirmed update comes again with its id; the next one continues the numbering.
      expect(updateIds((await getJson(`${sim.base}/bot${tg.token}/getUpdates`)).body)).toEqual([pending[1]]);
      await sim.control.act(ivan.id, { action: 'send_text', bot_id: tg.id, text: 'where is it?' });
      const next = await getJson(`${sim.base}/bot${tg.token}/getUpdates?offset=${pending[1]! + 1}`);
      expect(updateIds(next.body)).toEqual([pending[1]! + 1]);
      // MAX: the read position and the subscription are back; new updates go to the webhook.
      expect((await getJson(`${sim.base}/updates?timeout=0`, { Authorization: max.token })).body).toEqual({
        updates: [],
        marker: maxPoll.body.marker,
      });
      await sim.control.act(ivan.id, { action: 'send_text', bot_id: max.id, text: 'hello' });
      const [pushed] = await hooks.waitFor(1);
      expect(pushed!.body).toMatchObject({
        update_type: 'message_created',
        message: { body: { text: 'hello' } },
      });
      // The fault is still armed for its two remaining calls.
      const getMe = async () => (await getJson(`${sim.base}/bot${tg.token}/getMe`)).status;
      expect([await getMe(), await getMe(), await getMe()]).toEqual([500, 500, 200]);
      // New bots and people never take an earlier id.
      const later = await sim.control.createBot('telegram', 'later_bot');
      expect(later.id).toBeGreaterThan(tg.id);
      expect((await sim.control.createPerson('79123456780', 'Petr')).id).toBe(ivan.id + 1);
    } finally {
      await sim.close();
      await hooks.close();
    }
  });

  it('loses nothing it answered when the process is killed with SIGKILL', async () => {
    const file = join(dir, 'state.sqlite');
    let service = run(file);
    try {
      let base = await service.url();
      const control = () => new ControlClient(base);
      const tg = await control().createBot('telegram', 'shop_bot');
      const ivan = await reachablePerson(control(), tg, '79123456789');
      const secret = newSecret();
      await control().call('PUT', '/inspector/demo', { secrets: [secret] });
      await deliver({ base }, 'demo', statusBody(), [secret]);
      const before = await shown(control());
      // Killed straight after the answer, with no other call that could save it meanwhile.
      const sent = await postJson(`${base}/bot${tg.token}/sendMessage`, {
        chat_id: ivan.telegram_user_id,
        text: 'The last thing answered',
      });
      expect(sent.status).toBe(200);
      service.child.kill('SIGKILL');
      await service.exited;

      service = run(file);
      base = await service.url();
      const after = await shown(control());
      expect(after.messages[0]!.map((m) => m.text)).toEqual(['The last thing answered']);
      expect({ ...after, messages: [], people: [] }).toEqual({ ...before, messages: [], people: [] });
      expect((await getJson(`${base}/bot${tg.token}/getMe`)).status).toBe(200);
    } finally {
      service.child.kill('SIGKILL');
    }
  });

  it('refuses to start on a state file another simulator has open, naming it', async () => {
    const file = join(dir, 'state.sqlite');
    const first = run(file);
    try {
      await first.url();
      const second = run(file);
      expect(await second.exited).not.toBe(0);
      expect(second.output()).toContain(`STATE_FILE ${file} is in use by another process`);
    } finally {
      first.child.kill('SIGKILL');
    }
  });
});

/** The simulator as its own process (src/main.ts) on a free port, keeping its state in `file`. */
function run(file: string) {
  const child = spawn(
    process.execPath,
    ['--conditions=@mds/source', '--import', 'tsx', join(import.meta.dirname, '..', 'main.ts')],
    {
      env: { ...process.env, HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LOG_LEVEL: 'info', STATE_FILE: file },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  /** Its URL once it has started. */
  const url = async () => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const found = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out)?.[1];
      if (found && out.includes('"msg":"started"')) return found;
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`the simulator did not start:\n${out}`);
  };
  return { child, exited, url, output: () => out };
}
