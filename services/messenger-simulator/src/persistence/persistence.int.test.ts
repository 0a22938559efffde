// The change tracker and the SQLite store together, on real files: what is saved comes back whole.
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '@mds/logging';
import { act, busyWorld, ok, person, telegramBot, testWorld } from '../../test/world.js';
import { Faults } from '../domain/faults.js';
import { RateLimiter } from '../domain/rate-limit.js';
import { savedWorld } from '../domain/saved.js';
import { takeUpdates } from '../domain/telegram/get-updates.js';
import { sendMessage } from '../domain/telegram/send-message.js';
import { deleteWebhook } from '../domain/telegram/webhook.js';
import type { MaxBot, TelegramBot } from '../domain/types.js';
import { takeUpdates as takeMaxUpdates, unsubscribe } from '../domain/max/updates-api.js';
import { WebhookInspector } from '../inspector/inspector.js';
import { restoreAndTrack, type Persistence } from './persistence.js';
import { SqliteStore, StateFileError } from './sqlite-store.js';
import type { SimulatorStore, StoreWrite } from './store.js';

const logger = createLogger({ service: 'test', level: 'silent' });
const SECRET = `whsec_${Buffer.from('a-secret-of-32-bytes-for-testing').toString('base64')}`;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'simulator-state-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A store that records what it is asked to write and can be told to fail. */
class WatchedStore implements SimulatorStore {
  written: StoreWrite[][] = [];
  failing = false;

  constructor(readonly inner: SqliteStore) {}

  get location() {
    return this.inner.location;
  }
  load() {
    return this.inner.load();
  }
  write(writes: readonly StoreWrite[]) {
    if (this.failing) throw new Error('disk full');
    this.written.push([...writes]);
    this.inner.write(writes);
  }
  close() {
    this.inner.close();
  }
}

interface Running {
  t: ReturnType<typeof testWorld>;
  faults: Faults;
  inspector: WebhookInspector;
  store: WatchedStore;
  persistence: Persistence;
}

/** The simulator's state on the file: a fresh world, restored from it, then tracked. */
function open(file = join(dir, 'state.sqlite')): Running {
  const t = testWorld();
  const faults = new Faults();
  const inspector = new WebhookInspector({ perName: 3, names: 2 });
  const store = new WatchedStore(SqliteStore.open(file));
  const persistence = restoreAndTrack(store, { world: t.world, faults, inspector }, logger);
  return { t, faults, inspector, store, persistence };
}

function everything(s: Running) {
  return {
    world: savedWorld(s.t.world),
    faults: s.faults.list(),
    nextFault: s.faults.nextFaultId,
    inspector: s.inspector.slotsInUseOrder(),
    seq: s.inspector.lastSeq,
  };
}

/** Saves, stops, starts again on the same file, and checks that nothing was lost. */
function restart(s: Running): Running {
  s.persistence.save();
  const before = everything(s);
  s.persistence.close();
  const next = open(s.store.location);
  next.t.advance(s.t.now() - next.t.now());
  expect(everything(next)).toEqual(before);
  return next;
}

function webhook(s: Running, name: string, id: string, secrets = [SECRET]) {
  const body = JSON.stringify({ type: 'message.status', event_id: id, state: 'sent' });
  const at = new Date();
  const headers = {
    'webhook-id': `msg_${id}`,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(`msg_${id}`, at, body)).join(' '),
  };
  return s.inspector.receive(name, { method: 'POST', headers, body, at: s.t.now() });
}

const maxOf = (s: Running) => [...s.t.world.bots.values()].find((b): b is MaxBot => b.messenger === 'max')!;
const telegramOf = (s: Running) =>
  [...s.t.world.bots.values()].find((b): b is TelegramBot => b.messenger === 'telegram')!;

describe('the simulator state across restarts', () => {
  it('brings back every change, saved step by step, through a run of restarts', () => {
    let s = open();
    busyWorld(s.t);
    s = restart(s);

    s.faults.add({ kind: '5xx', count: 3, messenger: 'telegram', method: 'sendMessage' });
    s.faults.add({ kind: 'latency', count: 1, ms: 5 });
    s.faults.take('telegram', 'any', 'sendMessage');
    s = restart(s);
    expect(s.faults.list().map((f) => f.remaining)).toEqual([2, 1]);
    s.faults.take('telegram', 'any', 'sendMessage');
    s = restart(s);
    expect(s.faults.list().map((f) => f.remaining)).toEqual([1, 1]);

    // Deliveries before the secret is known say no_secret; registering it verifies them in place.
    webhook(s, 'demo', '1');
    webhook(s, 'demo', '2');
    s = restart(s);
    s.inspector.setSecrets('demo', [SECRET]);
    s = restart(s);
    expect(s.inspector.deliveries('demo').map((d) => d.verified)).toEqual([true, true]);

    // Past the limits: the oldest delivery of a name goes, and the least recently used name.
    for (const id of ['3', '4']) webhook(s, 'demo', id);
    webhook(s, 'other', '5');
    s = restart(s);
    expect(s.inspector.deliveries('demo').map((d) => d.eventId)).toEqual(['4', '3', '2']);
    webhook(s, 'third', '6');
    webhook(s, 'demo', '7');
    s = restart(s);
    expect(s.inspector.names().map((n) => n.name)).toEqual(['demo', 'third']);

    // Each part that can change on its own, one at a time.
    const oneAtATime: ((s: Running) => void)[] = [
      (s) => (telegramOf(s).lastWebhookError = { at: s.t.now(), message: 'Read timeout expired' }),
      (s) =>
        takeUpdates(
          telegramOf(s),
          { offset: undefined, limit: 1, timeoutS: 0, allowedUpdates: new Set(['message']) },
          s.t.now(),
        ),
      (s) => unsubscribe(maxOf(s), 'https://hooks.example/max'),
      (s) =>
        takeMaxUpdates(maxOf(s), { marker: undefined, limit: 1, timeoutS: 0, types: undefined }, s.t.now()),
      (s) => s.t.world.deactivate(s.t.world.people.get(1)!),
      (s) => (s.t.world.people.get(1)!.chats.get(telegramOf(s).id)!.status = 'blocked'),
      (s) => (s.t.world.people.get(1)!.chats.get(telegramOf(s).id)!.replyKeyboard = undefined),
      (s) => (s.t.world.people.get(1)!.chats.get(telegramOf(s).id)!.nextMessageNumber += 1),
    ];
    for (const change of oneAtATime) {
      change(s);
      s = restart(s);
    }
    s.t.world.people.get(1)!.deactivated = false;
    s.t.world.people.get(1)!.chats.get(telegramOf(s).id)!.status = 'active';

    // A transcript past its limit (5 in the test world) keeps its newest entries.
    const bot = telegramOf(s);
    const ivan = s.t.world.people.get(1)!;
    for (let i = 0; i < 7; i++) act(s.t.world, ivan, bot, { type: 'send_text', text: `m${i}` });
    s = restart(s);
    expect(
      s.t.world.people
        .get(1)!
        .chats.get(bot.id)!
        .transcript.map((e) => e.text),
    ).toEqual(['m2', 'm3', 'm4', 'm5', 'm6']);

    // Updates confirmed by an offset, then all dropped with the webhook.
    const tg = telegramOf(s);
    const pending = tg.updates.read(0, 100);
    takeUpdates(
      tg,
      { offset: pending[2]!.id, limit: 100, timeoutS: 0, allowedUpdates: undefined },
      s.t.now(),
    );
    s = restart(s);
    expect(telegramOf(s).updates.head()!.id).toBe(pending[2]!.id);
    deleteWebhook(telegramOf(s), { drop_pending_updates: 'true' });
    s = restart(s);
    expect(telegramOf(s).updates.size).toBe(0);
    expect(telegramOf(s).updates.nextId).toBe(tg.updates.nextId);

    // A bot removed, and a bot with a fixed token removed and made again (the same id, a new bot).
    const token = `7000000009:AA${'f'.repeat(33)}`;
    const fixed = ok(s.t.world.createBot({ messenger: 'telegram', username: 'fixed_bot', token }));
    act(s.t.world, s.t.world.people.get(1)!, fixed, { type: 'start' });
    s = restart(s);
    s.t.world.removeBot(s.t.world.bots.get(fixed.id)!);
    const again = ok(s.t.world.createBot({ messenger: 'telegram', username: 'fixed_bot', token }));
    s.t.world.removeBot(telegramOf(s));
    s = restart(s);
    expect(s.t.world.bots.get(again.id)!.chats.size).toBe(0);
    expect([...s.t.world.bots.values()].map((b) => b.username)).toEqual(['shop', 'fixed_bot']);

    s.faults.remove(s.faults.list()[0]!.id);
    s.inspector.clearDeliveries('third');
    s = restart(s);
    expect(s.faults.list()).toHaveLength(1);
    expect(s.inspector.deliveries('third')).toEqual([]);

    // A reset forgets everything; ids go on.
    s.t.world.reset();
    s.faults.clear();
    s.inspector.reset();
    s = restart(s);
    expect(everything(s).world.bots).toEqual([]);
    expect(person(s.t.world, '79123456782', 'Anna').id).toBe(3);
    expect(s.faults.add({ kind: '429', count: 1 }).id).toBe(3);
    expect(webhook(s, 'demo', '8').seq).toBe(8);
    s = restart(s);
    s.persistence.close();
  });

  it('writes only what changed, and nothing when nothing did', () => {
    const s = open();
    const { tg, ivan } = busyWorld(s.t);
    s.persistence.save();
    s.store.written = [];
    s.persistence.save();
    expect(s.store.written).toEqual([]);

    const telegram = {
      world: s.t.world,
      limiter: new RateLimiter(false),
      limits: { bot: { ratePerS: 1, burst: 1 }, chat: { ratePerS: 1, burst: 1 } },
    };
    sendMessage(telegram, tg, { chat_id: ivan.telegramUserId, text: 'one more' });
    s.persistence.save();
    act(s.t.world, ivan, tg, { type: 'send_text', text: 'thanks' });
    s.persistence.save();
    webhook(s, 'demo', '1');
    s.persistence.save();
    expect(s.store.written.map((writes) => writes.map((w) => w.kind))).toEqual([
      ['putChat', 'appendEntry'],
      ['putBot', 'appendUpdate', 'putChat', 'appendEntry'],
      ['meta', 'putInspectorName', 'putDelivery'],
    ]);
    s.persistence.close();
  });

  it('counts nothing as saved when the store fails, and saves it all once it works again', () => {
    const s = open();
    busyWorld(s.t);
    s.store.failing = true;
    expect(() => s.persistence.save()).toThrow('disk full');
    s.t.world.createPerson({ phone: '79123456783', firstName: 'Late' });
    s.store.failing = false;
    const next = restart(s);
    expect(next.t.world.people.size).toBe(3);
    next.persistence.close();
  });

  it('keeps the order bots and chats were made in, which is not the order of their ids', () => {
    let s = open();
    const max = ok(s.t.world.createBot({ messenger: 'max', username: 'first' }));
    const tg = telegramBot(s.t.world, 'second_bot');
    const ivan = person(s.t.world);
    act(s.t.world, ivan, tg, { type: 'start' });
    act(s.t.world, ivan, max, { type: 'start' });
    s = restart(s);
    expect([...s.t.world.bots.keys()]).toEqual([max.id, tg.id]);
    expect([...s.t.world.people.get(ivan.id)!.chats.keys()]).toEqual([tg.id, max.id]);
    s.persistence.close();
  });
});

describe('the state file', () => {
  it('is readable by its owner only: it holds bot tokens', () => {
    const s = open(join(dir, 'nested', 'state.sqlite'));
    s.persistence.close();
    expect(statSync(join(dir, 'nested', 'state.sqlite')).mode & 0o777).toBe(0o600);
  });

  it('refuses a file another simulator has open', () => {
    const file = join(dir, 'state.sqlite');
    const first = SqliteStore.open(file);
    try {
      expect(() => SqliteStore.open(file)).toThrow(/is in use by another process/);
    } finally {
      first.close();
    }
    SqliteStore.open(file).close();
  });

  it('refuses what is not its own, or was written by a newer simulator, saying what to do', () => {
    const garbage = join(dir, 'garbage.sqlite');
    writeFileSync(garbage, 'not a database at all, but long enough to have a header '.repeat(20));
    expect(() => SqliteStore.open(garbage)).toThrow(StateFileError);
    expect(() => SqliteStore.open(garbage)).toThrow(/not a simulator state file.*Move the file away/);

    const foreign = join(dir, 'foreign.sqlite');
    const db = new DatabaseSync(foreign);
    db.exec('CREATE TABLE accounts (id INTEGER)');
    db.close();
    expect(() => SqliteStore.open(foreign)).toThrow(/holds tables of something else/);

    const newer = join(dir, 'newer.sqlite');
    SqliteStore.open(newer).close();
    const upgraded = new DatabaseSync(newer);
    upgraded.exec('PRAGMA user_version = 99');
    upgraded.close();
    expect(() => SqliteStore.open(newer)).toThrow(/state format 99; this one reads 1/);
  });
});
