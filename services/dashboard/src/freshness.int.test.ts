// How far behind the read models are, as every page's banner asks it: the whole consumer group's lag, the
// same from whichever replica serves the page, though each replica owns only some of the partitions.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEvent, topics, type MessageEvent } from '@mds/contracts';
import {
  Browser,
  companyWithOwner,
  eventually,
  startDashboardStack,
  type DashboardStack,
} from '../test/support.js';

let stack: DashboardStack;

beforeAll(async () => {
  stack = await startDashboardStack({ dispatcher: false, replicas: 2 });
});
afterAll(async () => {
  await stack?.stop();
});

describe("the read models' lag", () => {
  it("is the group's, from either replica: an event stuck on one replica's partition shows on the other's pages", async () => {
    const { owner } = await companyWithOwner(stack, 'Fresh');
    const second = Object.assign(new Browser(stack.urls[1]!), { cookie: owner.cookie, csrf: owner.csrf });
    const behind = async (browser: Browser) =>
      (await browser.call<{ behind_seconds: number }>('GET', '/freshness')).body.behind_seconds;
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      // Both replicas report their own partitions.
      await eventually(
        'both replicas reporting',
        async () =>
          Number(
            (
              await db.query<{ n: string }>(
                'select count(distinct reported_by) as n from dashboard.read_model_lag',
              )
            ).rows[0]?.n,
          ) === 2,
      );
      expect(await behind(owner)).toBe(0);
      expect(await behind(second)).toBe(0);

      // The read models cannot store for a while, and one event, four minutes old, waits on one partition.
      await db.query('begin');
      await db.query('lock table dashboard.messages, dashboard.timeline in exclusive mode');
      const messageId = randomUUID();
      await stack.publisher.publish([
        {
          topic: topics.message,
          key: messageId,
          record: newEvent<MessageEvent>({
            eventId: randomUUID(),
            occurredAt: new Date(Date.now() - 4 * 60_000),
            companyId: randomUUID(),
            streamId: messageId,
            producer: 'telegram-sender',
            event: {
              $case: 'messageSent',
              value: { botId: randomUUID(), providerMessageId: '1', attempts: 1 },
            },
          }),
        },
      ]);
      await eventually('four minutes behind on the first', async () => (await behind(owner)) >= 240);
      await eventually('four minutes behind on the second', async () => (await behind(second)) >= 240);
      const owners = await db.query<{ reported_by: string }>(
        'select reported_by from dashboard.read_model_lag where oldest_pending_at is not null',
      );
      // One replica is stuck; the other, whose pages say it as well, holds none of it.
      expect(new Set(owners.rows.map((r) => r.reported_by)).size).toBe(1);

      await db.query('commit');
      await eventually(
        'caught up on both',
        async () => (await behind(owner)) === 0 && (await behind(second)) === 0,
      );
    } finally {
      await db.query('rollback').catch(() => undefined);
      await db.end();
    }
  });
});
