// The message rows' fold on real PostgreSQL: the rows hold what @mds/message-state's rules decide (the first
// outcome, whichever batch or consumer brings it), each decided message is counted once, and two consumers
// folding one message at once (its events come from different topics) lose nothing of each other's.
import { randomUUID } from 'node:crypto';
import { Messenger, newEvent, type DeliveryEvent, type MessageEvent } from '@mds/contracts';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { foldState } from '@mds/message-state';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { projectEvent, type DashboardRecord, type ProjectedEvent } from '../../domain/projection.js';
import { migrations } from './migrations.js';
import { applyProjected } from './projection-store.js';

let schema: TestSchema;
beforeAll(async () => {
  schema = await migratedTestSchema('dashboard_projection', migrations);
});
afterAll(() => schema?.drop());

const botId = randomUUID();
const start = Date.UTC(2026, 10, 21, 12);
const at = (ms: number) => new Date(start + ms);

function storyOf(company: string, id = randomUUID()) {
  const message = (ms: number, event: NonNullable<MessageEvent['event']>) =>
    newEvent<MessageEvent>({
      eventId: randomUUID(),
      occurredAt: at(ms),
      companyId: company,
      streamId: id,
      producer: 'test',
      event,
    });
  return {
    id,
    accepted: (ms = 0) =>
      message(ms, {
        $case: 'messageAccepted',
        value: {
          phoneNumber: '79123456789',
          text: 'Your order has shipped',
          messenger: Messenger.MESSENGER_TELEGRAM,
          botName: '',
          buttons: [],
          apiKeyId: 'k1',
          idempotencyKey: '',
        },
      }),
    routed: (ms = 5) =>
      newEvent<DeliveryEvent>({
        eventId: randomUUID(),
        occurredAt: at(ms),
        companyId: company,
        streamId: botId,
        producer: 'test',
        event: {
          $case: 'deliveryRequested',
          value: {
            messageId: id,
            chat: { messenger: Messenger.MESSENGER_TELEGRAM, botId, chatId: '5001', userId: '5001' },
            botName: 'shop',
            text: '',
            buttons: [],
          },
        },
      }),
    sent: (ms = 900) =>
      message(ms, {
        $case: 'messageSent',
        value: { botId, providerMessageId: '42', sentAt: at(ms), attempts: 1 },
      }),
    failed: (ms = 900, errorCode = 'CHAT_NOT_FOUND') =>
      message(ms, {
        $case: 'messageDeliveryFailed',
        value: { errorCode, errorDescription: 'no', failedAt: at(ms), attempts: 3, botId },
      }),
  };
}

const project = (...records: DashboardRecord[]): ProjectedEvent[] => records.map((r) => projectEvent(r)!);

interface Stored {
  state: string;
  error_code: string | null;
  finished_at: Date | null;
  accepted_at: Date | null;
  messenger: string | null;
  bot_id: string | null;
  chat_id: string | null;
  phone: string | null;
}
const rowOf = (id: string) =>
  schema
    .db('messages')
    .where('message_id', id)
    .first<Stored | undefined>(
      'state',
      'error_code',
      'finished_at',
      'accepted_at',
      'messenger',
      'bot_id',
      'chat_id',
      'phone',
    );
/** How many outcomes the overview's per-minute counts hold for the company. */
const counted = async (company: string) =>
  Number(
    (
      await schema.db('outcome_minutes').where('company_id', company).sum<{ sum: string | null }[]>('count')
    )[0]!.sum ?? 0,
  );

it('keeps the first outcome across batches, as @mds/message-state folds it, and counts it once', async () => {
  const company = randomUUID();
  const s = storyOf(company);
  const [accepted, failed, sent] = [s.accepted(0), s.failed(900), s.sent(1_500)];
  await applyProjected(schema.db, project(accepted, s.routed(5), failed));
  await applyProjected(schema.db, project(sent));
  const expected = foldState([accepted, failed, sent])!;
  expect(await rowOf(s.id)).toEqual({
    state: expected.status,
    error_code: expected.errorCode,
    finished_at: new Date(expected.finishedAt!),
    accepted_at: new Date(expected.acceptedAt!),
    messenger: expected.messenger,
    bot_id: botId,
    chat_id: '5001',
    phone: '79123456789',
  });
  expect(expected.status).toBe('failed');
  expect(await counted(company)).toBe(1);
});

it('decides a message whose outcome is read before its acceptance, and sorts it by the acceptance', async () => {
  const company = randomUUID();
  const s = storyOf(company);
  await applyProjected(schema.db, project(s.sent(900)));
  expect(await rowOf(s.id)).toMatchObject({ state: 'sent', accepted_at: null, messenger: null });
  await applyProjected(schema.db, project(s.routed(5), s.accepted(0)));
  expect(await rowOf(s.id)).toMatchObject({
    state: 'sent',
    accepted_at: at(0),
    messenger: 'telegram',
    chat_id: '5001',
  });
  expect(await schema.db('messages').where('message_id', s.id).first<{ sort_at: Date }>('sort_at')).toEqual({
    sort_at: at(0),
  });
  expect(await counted(company)).toBe(1);
});

it('two consumers folding the same messages at once take turns: nothing lost, one outcome each, counted once', async () => {
  // Rounds of two batches at once: how their transactions interleave is up to the database.
  for (let round = 0; round < 4; round++) {
    const company = randomUUID();
    const stories = Array.from({ length: 250 }, () => storyOf(company));
    // One consumer reads the messages' topic (acceptances, then a failure), the other the delivery topics and
    // a send that, for half of them, the log holds before the failure.
    const first = stories.flatMap((s, i) => project(s.accepted(0), s.failed(i % 2 ? 900 : 1_100)));
    const second = stories.flatMap((s) => project(s.routed(5), s.sent(1_000)));
    await Promise.all([applyProjected(schema.db, first), applyProjected(schema.db, second)]);
    const rows = await Promise.all(stories.map((s) => rowOf(s.id)));
    for (const row of rows) {
      expect(row).toMatchObject({ accepted_at: at(0), chat_id: '5001', phone: '79123456789' });
      expect(['sent', 'failed']).toContain(row!.state);
    }
    expect(await counted(company)).toBe(stories.length);
  }
}, 60_000);
