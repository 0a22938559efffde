// The read models' upgrade that puts each message's text on its row (the message log's text and search), on
// real PostgreSQL: messages folded before it get their text from their timelines' acceptances (none for an
// erased one), new ones get it as they are folded, and the upgrade reverts.
import { randomUUID } from 'node:crypto';
import { migrateDown, migrateUp } from '@mds/db';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Messenger, newEvent, type MessageEvent } from '@mds/contracts';
import { projectEvent, type ProjectedEvent } from '../../domain/projection.js';
import { rememberSubjects } from '@mds/personal-data';
import { listMessages } from './message-log.js';
import { migrations } from './migrations.js';
import { forgetInReadModels } from './personal-data.js';
import { applyProjected } from './projection-store.js';

const UPGRADE = '0012_log_message_text';
let schema: TestSchema;

beforeAll(async () => {
  schema = await migratedTestSchema(
    'dashboard_message_text',
    migrations.filter((m) => m.name < UPGRADE),
  );
});
afterAll(() => schema?.drop());

const company = randomUUID();

function accepted(id: string, text: string, at: Date): ProjectedEvent {
  return projectEvent(
    newEvent<MessageEvent>({
      eventId: randomUUID(),
      occurredAt: at,
      companyId: company,
      streamId: id,
      producer: 'gateway',
      event: {
        $case: 'messageAccepted',
        value: {
          phoneNumber: '79123456789',
          text,
          messenger: Messenger.MESSENGER_TELEGRAM,
          botName: '',
          buttons: [],
          apiKeyId: 'k',
          idempotencyKey: '',
        },
      },
    }),
  )!;
}

it('fills in the text of messages folded before it, and the fold keeps it from then on', async () => {
  const { db } = schema;
  const through = migrations.filter((m) => m.name <= UPGRADE);
  const [old, erased] = [randomUUID(), randomUUID()];
  const at = new Date(Date.now() - 60_000);
  // Rows as the version before left them: the message rows without text, the text on the timeline only.
  // The erased one a minute before the other: the log's order is certain.
  for (const [id, data, sortAt] of [
    [old, { text: 'Ваш заказ отправлен', phone_number: '79123456789' }, at],
    [erased, { erased: true }, new Date(at.getTime() - 60_000)],
  ] as const) {
    await db('messages').insert({ message_id: id, company_id: company, state: 'sent', sort_at: sortAt });
    await db('timeline').insert({
      event_id: randomUUID(),
      subject_id: id,
      company_id: company,
      type: 'MessageAccepted',
      at: sortAt,
      producer: 'gateway',
      data: JSON.stringify(data),
    });
  }

  expect(await migrateUp(db, schema.schema, through)).toEqual([UPGRADE]);
  const texts = async () =>
    Object.fromEntries(
      (
        await db('messages')
          .where('company_id', company)
          .select<{ message_id: string; text: string | null }[]>('message_id', 'text')
      ).map((r) => [r.message_id, r.text]),
    );
  expect(await texts()).toEqual({ [old]: 'Ваш заказ отправлен', [erased]: null });

  const fresh = randomUUID();
  await applyProjected(db, [accepted(fresh, 'Your code is 4711', new Date())]);
  const page = await listMessages(db, company, { text: 'ЗАКАЗ', limit: 10 });
  expect(page.messages.map((m) => [m.message_id, m.text_preview])).toEqual([[old, 'Ваш заказ отправлен']]);
  expect((await listMessages(db, company, { limit: 10 })).messages.map((m) => m.text_preview)).toEqual([
    'Your code is 4711',
    'Ваш заказ отправлен',
    null,
  ]);

  expect(await migrateDown(db, schema.schema, through)).toEqual([UPGRADE]);
  expect(await db.schema.hasColumn('messages', 'text')).toBe(false);
});

it("forgets a person's texts on their messages' rows: no longer shown, no longer found", async () => {
  const { db } = schema;
  await migrateUp(db, schema.schema, migrations);
  const [theirs, others] = [randomUUID(), randomUUID()];
  await applyProjected(db, [
    accepted(theirs, 'Анна, ваш заказ готов', new Date()),
    accepted(others, 'Борис, ваш заказ готов', new Date()),
  ]);
  await rememberSubjects(db, [{ company_id: company, subject_id: 'anna', row_id: theirs }]);
  const found = async () =>
    (await listMessages(db, company, { text: 'заказ готов', limit: 10 })).messages.map((m) => m.message_id);
  expect((await found()).sort()).toEqual([theirs, others].sort());

  await forgetInReadModels(db, company, 'anna');
  expect(await found()).toEqual([others]);
  expect(await db('messages').where('message_id', theirs).first('text', 'phone')).toEqual({
    text: null,
    phone: null,
  });
});
