import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventPublisher } from '@mds/kafka';
import { freePort, startPostgres, stopProcess } from '@mds/local-infra';
import { createTestDatabase, uniqueName } from '@mds/local-infra/testing';
import {
  ManualClock,
  Receiver,
  eventually,
  messageSent,
  outcomePublisher,
  publishMessages,
  registrySetup,
  startTestDispatcher,
  startTestRegistry,
  type Behaviour,
  type DispatcherHandle,
  type RegistryHandle,
} from '../test/support.js';

interface DeliveryView {
  webhook_id: string;
  status: string;
  attempt_log: { attempt: number; status_code: number; outcome: string }[];
}

let registry: RegistryHandle;
let receiver: Receiver;

beforeAll(async () => {
  [registry, receiver] = await Promise.all([startTestRegistry(), new Receiver().start()]);
});

afterAll(async () => {
  await registry?.stop();
  await receiver?.close();
});

const attemptsOf = async (dispatcher: DispatcherHandle, eventId: string, n: number) =>
  eventually(
    `${n} attempts of ${eventId}`,
    async () => {
      const found = await dispatcher.admin<{ deliveries: DeliveryView[] }>('GET', `/deliveries/${eventId}`);
      const d = found.status === 200 ? found.body.deliveries[0] : undefined;
      return d && d.attempt_log.length >= n && d;
    },
    60_000,
  );

/** Fails the first attempt of every webhook-id, then answers 200. */
function failFirst(): Behaviour {
  const seen = new Set<string>();
  return (req, res) => {
    const id = String(req.headers['webhook-id']);
    const first = !seen.has(id);
    seen.add(id);
    res.writeHead(first ? 500 : 200).end();
  };
}

describe('durability', () => {
  it('a dispatcher restarted in the middle of a schedule goes on with it', async () => {
    const clock = new ManualClock();
    const setup = {
      registry,
      databaseUrl: await createTestDatabase('whd'),
      topicPrefix: `${uniqueName('whd')}.`,
      clock,
    };
    const path = receiver.endpoint(failFirst());
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const publisher = outcomePublisher(setup.topicPrefix);
    await publisher.connect();
    let dispatcher = await startTestDispatcher(setup);
    try {
      const sent = messageSent(companyId);
      await publishMessages(publisher, [sent]);
      await attemptsOf(dispatcher, sent.metadata.streamId, 1);
      await dispatcher.stop();
      clock.advance(5_000);
      dispatcher = await startTestDispatcher(setup);
      const after = await attemptsOf(dispatcher, sent.metadata.streamId, 2);
      expect(after.status).toBe('delivered');
      expect(after.attempt_log.map((a) => [a.attempt, a.status_code])).toEqual([
        [1, 500],
        [2, 200],
      ]);
      const got = receiver.at(path);
      expect(got).toHaveLength(2);
      expect(got.every((r) => r.verified)).toBe(true);
      expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    } finally {
      await dispatcher.stop();
      await publisher.disconnect();
    }
  });

  it('keeps its schedule and its incoming notifications through a PostgreSQL restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wh-pg-'));
    // As root, PostgreSQL runs as another user, who must reach its data folder.
    chmodSync(dir, 0o755);
    const port = await freePort();
    const pgOptions = { dir, port, database: 'dispatcher' };
    let pg = await startPostgres(pgOptions);
    const clock = new ManualClock();
    const setup = { registry, databaseUrl: pg.databaseUrl, topicPrefix: `${uniqueName('whpg')}.`, clock };
    const path = receiver.endpoint(failFirst());
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const publisher: EventPublisher = outcomePublisher(setup.topicPrefix);
    await publisher.connect();
    const dispatcher = await startTestDispatcher(setup);
    try {
      const first = messageSent(companyId);
      await publishMessages(publisher, [first]);
      await attemptsOf(dispatcher, first.metadata.streamId, 1);

      await stopProcess(pg.pid, 15_000, 'SIGINT');
      // While the database is down: a new outcome arrives, and the first one falls due.
      const second = messageSent(companyId);
      await publishMessages(publisher, [second]);
      clock.advance(5_000);
      await new Promise((r) => setTimeout(r, 1_000));
      pg = await startPostgres(pgOptions);

      const firstAfter = await attemptsOf(dispatcher, first.metadata.streamId, 2);
      expect(firstAfter.status).toBe('delivered');
      expect(firstAfter.attempt_log.map((a) => a.status_code)).toEqual([500, 200]);
      await attemptsOf(dispatcher, second.metadata.streamId, 1);
      clock.advance(5_000);
      const secondAfter = await attemptsOf(dispatcher, second.metadata.streamId, 2);
      expect(secondAfter.status).toBe('delivered');
    } finally {
      await dispatcher.stop();
      await publisher.disconnect();
      await stopProcess(pg.pid, 15_000, 'SIGINT');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('waits for the registry when it cannot be asked, without counting an attempt or setting anything aside', async () => {
    const own = await registrySetup(await freePort());
    let ownRegistry = await startTestRegistry(own);
    const path = receiver.endpoint();
    const { companyId } = await ownRegistry.company(`${receiver.url}${path}`, receiver);
    await ownRegistry.stop();
    const clock = new ManualClock();
    const setup = {
      registry: ownRegistry,
      databaseUrl: await createTestDatabase('whr'),
      topicPrefix: `${uniqueName('whr')}.`,
      clock,
    };
    const publisher = outcomePublisher(setup.topicPrefix);
    await publisher.connect();
    const dispatcher = await startTestDispatcher(setup);
    try {
      const sent = messageSent(companyId);
      await publishMessages(publisher, [sent]);
      // Which endpoints it goes to is the registry's to say: the notification waits in the log meanwhile (its
      // batch is retried), with no row, no attempt, and nothing set aside.
      await eventually('the registry asked in vain', async () => {
        const text = await (await fetch(`${dispatcher.url}/metrics`)).text();
        const reads = text.split('\n').find((l) => l.startsWith('mds_webhook_endpoint_reads_total{'));
        return Number(reads?.split(' ').at(-1) ?? 0) >= 1;
      });
      const db = new pg.Client({ connectionString: setup.databaseUrl });
      await db.connect();
      try {
        for (const table of ['deliveries', 'dead_letters']) {
          const { rows } = await db.query<{ n: number }>(
            `select count(*)::int as n from webhook_dispatcher.${table}`,
          );
          expect(rows[0]!.n, table).toBe(0);
        }
      } finally {
        await db.end();
      }
      ownRegistry = await startTestRegistry(own);
      // Time passes (the gRPC channel reconnects with its own backoff) until the registry answers again.
      const after = await eventually(
        'delivered once the registry is back',
        async () => {
          clock.advance(5_000);
          const found = await dispatcher.admin<{ deliveries: DeliveryView[] }>(
            'GET',
            `/deliveries/${sent.metadata.streamId}`,
          );
          const d = found.body.deliveries?.[0];
          return d && d.attempt_log.length > 0 && d;
        },
        60_000,
      );
      expect(after.status).toBe('delivered');
      expect(after.attempt_log.map((a) => a.attempt)).toEqual([1]);
      expect(receiver.at(path)).toHaveLength(1);
    } finally {
      await dispatcher.stop();
      await publisher.disconnect();
      await ownRegistry.stop();
    }
  });

  it("one company's endpoint answering NUL bytes never holds up another company's webhooks", async () => {
    const clock = new ManualClock();
    const setup = {
      registry,
      databaseUrl: await createTestDatabase('whnul'),
      topicPrefix: `${uniqueName('whnul')}.`,
      clock,
      env: { WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_LEASE_SECONDS: '7' },
    };
    // A's endpoint fails with a body PostgreSQL cannot store as text; B's is healthy.
    const pathA = receiver.endpoint((_req, res) => void res.writeHead(500).end('boom\u0000'));
    const pathB = receiver.endpoint();
    const a = await registry.company(`${receiver.url}${pathA}`, receiver);
    const b = await registry.company(`${receiver.url}${pathB}`, receiver);
    const publisher = outcomePublisher(setup.topicPrefix);
    await publisher.connect();
    const dispatcher = await startTestDispatcher(setup);
    try {
      const toA = messageSent(a.companyId);
      const toB = [1, 2, 3].map(() => messageSent(b.companyId));
      await publishMessages(publisher, [toA, ...toB]);
      const failedA = await attemptsOf(dispatcher, toA.metadata.streamId, 1);
      expect(failedA.attempt_log[0]).toMatchObject({ status_code: 500, response_excerpt: 'boom\ufffd' });
      // Two lease periods: a result that could not be stored would have its delivery tried again by now.
      await new Promise((r) => setTimeout(r, 2 * 7_000 + 1_000));
      expect(receiver.at(pathB)).toHaveLength(3);
      expect(new Set(receiver.at(pathB).map((r) => r.headers['webhook-id'])).size).toBe(3);
      expect(receiver.at(pathA)).toHaveLength(1);
      expect((await fetch(`${dispatcher.url}/readyz`)).status).toBe(200);
    } finally {
      await dispatcher.stop();
      await publisher.disconnect();
    }
  });

  it('two dispatchers on one schema never send the same attempt twice', async () => {
    const clock = new ManualClock();
    const setup = {
      registry,
      databaseUrl: await createTestDatabase('whx'),
      topicPrefix: `${uniqueName('whx')}.`,
      clock,
    };
    const companies: { path: string; flaky: boolean; companyId: string }[] = [];
    for (let i = 0; i < 6; i++) {
      const path = receiver.endpoint(i % 2 === 0 ? undefined : failFirst());
      companies.push({
        path,
        flaky: i % 2 === 1,
        ...(await registry.company(`${receiver.url}${path}`, receiver)),
      });
    }
    const publisher = outcomePublisher(setup.topicPrefix);
    await publisher.connect();
    const [a, b] = await Promise.all([startTestDispatcher(setup), startTestDispatcher(setup)]);
    try {
      const perCompany = 40;
      for (const c of companies) {
        await publishMessages(
          publisher,
          Array.from({ length: perCompany }, () => messageSent(c.companyId)),
        );
      }
      const total = companies.length * perCompany;
      const received = () => companies.reduce((n, c) => n + receiver.at(c.path).length, 0);
      await eventually('first attempts', () => received() >= total, 60_000);
      // Stored too: a result stored after the clock moves would schedule its retry from the new time.
      const db = new pg.Client({ connectionString: setup.databaseUrl });
      await db.connect();
      try {
        await eventually(
          'first attempts stored',
          async () =>
            Number(
              (
                await db.query<{ n: string }>(
                  'select count(*) as n from webhook_dispatcher.deliveries where attempts > 0',
                )
              ).rows[0]!.n,
            ) >= total,
          60_000,
        );
      } finally {
        await db.end();
      }
      clock.advance(5_000);
      const expected = total + (companies.length / 2) * perCompany;
      await eventually('retries', () => received() >= expected, 60_000);
      // Both replicas did work, and a little longer changes nothing.
      await new Promise((r) => setTimeout(r, 1_000));
      expect(received()).toBe(expected);
      for (const c of companies) {
        const counts = new Map<string, number>();
        for (const r of receiver.at(c.path))
          counts.set(r.headers['webhook-id']!, (counts.get(r.headers['webhook-id']!) ?? 0) + 1);
        expect(counts.size).toBe(perCompany);
        expect(new Set(counts.values())).toEqual(new Set([c.flaky ? 2 : 1]));
      }
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await publisher.disconnect();
    }
  });
});

describe('signatures', () => {
  it('every webhook these tests received verifies with the standardwebhooks library', () => {
    expect(receiver.received.length).toBeGreaterThan(300);
    expect(receiver.received.filter((r) => !r.verified).map((r) => r.path)).toEqual([]);
  });
});
