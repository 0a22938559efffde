import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AttemptOutcome,
  isCleanText,
  Messenger,
  newEvent,
  onUncleanText,
  topics,
  type ClientEvent,
  type MessageEvent,
  type UncleanText,
} from '@mds/contracts';
import { openDatabase } from '@mds/db';
import { unary } from '@mds/grpc';
import { registryPersonKeys, sealOf, sealRecords } from '@mds/personal-data';
import type { EventPublisher } from '@mds/kafka';
import { createTestDatabase, uniqueName } from '@mds/local-infra/testing';
import { SCHEMA } from './adapters/db/migrations.js';
import {
  INTERNAL_TOKEN,
  ManualClock,
  Receiver,
  type Behaviour,
  collectWebhookEvents,
  eventually,
  messageEvent,
  messageSent,
  outcomePublisher,
  publishMessages,
  publishRequests,
  registrySetup,
  requestEvent,
  startTestDispatcher,
  startTestRegistry,
  type DispatcherHandle,
  type RegistryHandle,
} from '../test/support.js';

interface AttemptView {
  attempt: number;
  trigger: string;
  url: string;
  status_code: number;
  latency_ms: number;
  outcome: string;
  error: string | null;
  response_excerpt: string;
  next_attempt_at: string | null;
  attempted_at: string;
}
interface DeliveryView {
  webhook_id: string;
  kind: string;
  event_id: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_error: string | null;
  attempt_log: AttemptView[];
  payload: Record<string, unknown>;
}

let registry: RegistryHandle;
let receiver: Receiver;
let dispatcher: DispatcherHandle;
let publisher: EventPublisher;
let webhookEvents: Awaited<ReturnType<typeof collectWebhookEvents>>;
const clock = new ManualClock();
const topicPrefix = `${uniqueName('wh')}.`;

const deliveryOf = async (eventId: string) => {
  const found = await dispatcher.admin<{ deliveries: DeliveryView[] }>('GET', `/deliveries/${eventId}`);
  return found.status === 200 ? found.body.deliveries[0] : undefined;
};
/** A counter of the dispatcher's /metrics with this label value (0 while it has none). */
const counter = async (name: string, label: string, value: string) => {
  const text = await (await fetch(`${dispatcher.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`${label}="${value}"`));
  return line ? Number(line.split(' ').at(-1)) : 0;
};
const untilAttempts = (eventId: string, n: number) =>
  eventually(`${n} attempts of ${eventId}`, async () => {
    const d = await deliveryOf(eventId);
    return d && d.attempt_log.length >= n && d;
  });

let databaseUrl: string;

beforeAll(async () => {
  // On the dispatcher's topics: it follows the registry's account events (endpoint changes).
  [registry, receiver] = await Promise.all([
    startTestRegistry(await registrySetup(0, topicPrefix)),
    new Receiver().start(),
  ]);
  databaseUrl = await createTestDatabase('wh');
  dispatcher = await startTestDispatcher({
    registry,
    databaseUrl,
    topicPrefix,
    clock,
  });
  publisher = outcomePublisher(topicPrefix);
  await publisher.connect();
  webhookEvents = await collectWebhookEvents(topicPrefix);
});

afterAll(async () => {
  await webhookEvents?.stop();
  await publisher?.disconnect();
  await dispatcher?.stop();
  await registry?.stop();
  await receiver?.close();
});

describe('delivery', () => {
  it('POSTs message.status with the spec fields, signed so that standardwebhooks verifies it', async () => {
    const path = receiver.endpoint();
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const sent = messageSent(companyId);
    const failed = messageEvent(companyId, {
      $case: 'messageDeliveryFailed',
      value: {
        errorCode: 'BOT_BLOCKED_BY_USER',
        errorDescription: 'the client blocked or stopped the bot',
        failedAt: new Date('2026-11-21T09:59:59.000Z'),
        attempts: 1,
        botId: 'b',
      },
    });
    const accepted = messageEvent(companyId, {
      $case: 'messageAccepted',
      value: {
        phoneNumber: '79123456789',
        text: 'hi',
        messenger: 1,
        botName: '',
        buttons: [],
        apiKeyId: 'k',
        idempotencyKey: '',
      },
    });
    // The sent event twice (Kafka redelivers): still one notification.
    await publishMessages(publisher, [accepted, sent, sent, failed]);
    const got = await eventually('two webhooks', () => receiver.at(path).length >= 2 && receiver.at(path));
    const bodies = got.map((r) => JSON.parse(r.body) as Record<string, unknown>);
    expect(bodies).toContainEqual({
      type: 'message.status',
      event_id: sent.metadata.streamId,
      timestamp: '2026-11-21T09:59:58.250Z',
      state: 'sent',
    });
    expect(bodies).toContainEqual({
      type: 'message.status',
      event_id: failed.metadata.streamId,
      timestamp: '2026-11-21T09:59:59.000Z',
      state: 'failed',
      error_code: 'BOT_BLOCKED_BY_USER',
      error_description: 'the client blocked or stopped the bot',
    });
    for (const r of got) {
      expect(r.verified).toBe(true);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    }
    const delivered = await untilAttempts(sent.metadata.streamId, 1);
    expect(delivered).toMatchObject({ status: 'delivered', attempts: 1, kind: 'message.status' });
    expect(delivered.attempt_log[0]).toMatchObject({
      status_code: 200,
      outcome: 'succeeded',
      response_excerpt: 'ok',
    });
    // Events on mds.webhook.v1, keyed by the webhook id.
    const webhookId = delivered.webhook_id;
    const events = await eventually('WebhookDelivered', () => {
      const mine = webhookEvents.events.filter((e) => e.metadata.streamId === webhookId);
      return mine.length >= 2 && mine;
    });
    expect(events.map((e) => e.event.$case)).toEqual(['webhookAttempted', 'webhookDelivered']);
    expect(events[0]!.event.value).toMatchObject({
      kind: 'message.status',
      subjectId: sent.metadata.streamId,
      attempt: 1,
      statusCode: 200,
      outcome: AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED,
    });
    expect(receiver.at(path)).toHaveLength(2);
    expect(await deliveryOf(accepted.metadata.streamId)).toBeUndefined();
  });

  it('a message with a fallback: one message.status, naming the channel that sent it and the one tried before', async () => {
    const path = receiver.endpoint();
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const messageId = randomUUID();
    const on = (event: NonNullable<MessageEvent['event']>) =>
      newEvent<MessageEvent>({
        eventId: randomUUID(),
        occurredAt: new Date('2026-11-21T09:59:59.000Z'),
        companyId,
        streamId: messageId,
        producer: 'test',
        event,
      });
    const telegram = { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop_bot' };
    const max = { messenger: Messenger.MESSENGER_MAX, botName: 'shop_max_bot' };
    const attempt = {
      ...telegram,
      botId: 'b1',
      errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
      errorDescription: 'not linked',
      failedAt: new Date('2026-11-21T09:59:58.000Z'),
    };
    const events = [
      on({
        $case: 'messageAccepted',
        value: {
          phoneNumber: '79123456789',
          text: 'hi',
          messenger: telegram.messenger,
          botName: telegram.botName,
          buttons: [],
          apiKeyId: 'k',
          idempotencyKey: '',
          fallback: { channel: 0, current: telegram, next: [max], tried: [] },
        },
      }),
      on({
        $case: 'messageAttemptFailed',
        value: { route: { channel: 0, current: telegram, next: [max], tried: [] }, attempt },
      }),
      on({
        $case: 'messageSent',
        value: {
          botId: 'b2',
          providerMessageId: '7',
          sentAt: new Date('2026-11-21T09:59:59.500Z'),
          attempts: 1,
          fallback: { channel: 1, current: max, next: [], tried: [attempt] },
        },
      }),
    ];
    await publishMessages(publisher, events);
    const got = await eventually('its webhook', () => receiver.at(path).length >= 1 && receiver.at(path));
    expect(JSON.parse(got[0]!.body)).toEqual({
      type: 'message.status',
      event_id: messageId,
      timestamp: '2026-11-21T09:59:59.500Z',
      state: 'sent',
      service: 'max',
      bot_name: 'shop_max_bot',
      attempts: [{ service: 'telegram', bot_name: 'shop_bot', error_code: 'CLIENT_NOT_LINKED_TO_BOT' }],
    });
    expect(got[0]!.verified).toBe(true);
    await untilAttempts(messageId, 1);
    expect(receiver.at(path)).toHaveLength(1);
  });

  it('delivers client.check and client.phone_changed in the same envelope', async () => {
    const path = receiver.endpoint();
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const check = requestEvent(companyId, {
      $case: 'clientChecked',
      value: {
        phoneNumber: '79123456789',
        exists: true,
        bots: [{ messenger: 1, botName: 'shop', reachable: true }],
      },
    });
    const changed = requestEvent(companyId, {
      $case: 'phoneChanged',
      value: { oldPhone: '79123456789', newPhone: '79123456780', linksMoved: 1 },
    });
    const rejected = requestEvent(companyId, {
      $case: 'phoneChangeRejected',
      value: {
        errorCode: 'OLD_PHONE_NOT_FOUND',
        errorDescription: 'no client with old_phone in the company',
      },
    });
    const requested = requestEvent(companyId, {
      $case: 'clientCheckRequested',
      value: { phoneNumber: '79123456789', apiKeyId: 'k', idempotencyKey: '' },
    });
    await publishRequests(publisher, [requested, check, changed, rejected]);
    const got = await eventually('three webhooks', () => receiver.at(path).length >= 3 && receiver.at(path));
    const bodies = got.map((r) => JSON.parse(r.body) as Record<string, unknown>);
    expect(got.every((r) => r.verified)).toBe(true);
    expect(bodies).toContainEqual({
      type: 'client.check',
      event_id: check.metadata.streamId,
      timestamp: '2026-11-21T09:59:59.500Z',
      phone_number: '79123456789',
      exists: true,
      bots: [{ service: 'telegram', bot_name: 'shop', reachable: true }],
    });
    expect(bodies).toContainEqual({
      type: 'client.phone_changed',
      event_id: changed.metadata.streamId,
      timestamp: '2026-11-21T09:59:59.500Z',
      state: 'changed',
      old_phone: '79123456789',
      new_phone: '79123456780',
      links_moved: 1,
    });
    expect(bodies).toContainEqual({
      type: 'client.phone_changed',
      event_id: rejected.metadata.streamId,
      timestamp: '2026-11-21T09:59:59.500Z',
      state: 'failed',
      error_code: 'OLD_PHONE_NOT_FOUND',
      error_description: 'no client with old_phone in the company',
    });
    expect(await deliveryOf(requested.metadata.streamId)).toBeUndefined();
  });

  it('opens a sealed PhoneChanged into the spec body, and blanks both numbers of it once the person is forgotten', async () => {
    const path = receiver.endpoint();
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const keys = registryPersonKeys({ address: registry.grpc, token: INTERNAL_TOKEN });
    const [changed] = await sealRecords(keys, [
      requestEvent(companyId, {
        $case: 'phoneChanged',
        value: { oldPhone: '79123450001', newPhone: '79123450002', linksMoved: 2 },
      }),
    ]);
    keys.close();
    expect(changed!.event.value).toMatchObject({ oldPhone: '', newPhone: '', sealed: expect.anything() });
    await publishRequests(publisher, [changed!]);
    const [got] = await eventually('the webhook', () => receiver.at(path).length >= 1 && receiver.at(path));
    expect(JSON.parse(got!.body)).toEqual({
      type: 'client.phone_changed',
      event_id: changed!.metadata.streamId,
      timestamp: '2026-11-21T09:59:59.500Z',
      state: 'changed',
      old_phone: '79123450001',
      new_phone: '79123450002',
      links_moved: 2,
    });
    await untilAttempts(changed!.metadata.streamId, 1);

    // The operator forgets the old number's person: the registry destroys the key and announces it (here
    // on the dispatcher's topics, which this test's registry does not share).
    const forgotten = await registry.admin<{ subject_id: string }>(
      'POST',
      `/companies/${companyId}/clients/79123450001/forget`,
    );
    expect(forgotten.body.subject_id).toBe(sealOf(changed!)!.subjectId);
    await publisher.publish([
      {
        topic: topics.client,
        key: companyId,
        record: newEvent<ClientEvent>({
          eventId: randomUUID(),
          occurredAt: new Date(),
          companyId,
          streamId: companyId,
          producer: 'client-registry',
          event: { $case: 'clientForgotten', value: { subjectId: forgotten.body.subject_id } },
        }),
      },
    ]);
    const db = await openDatabase({ url: databaseUrl, schema: SCHEMA });
    try {
      const body = await eventually('the numbers blanked', async () => {
        const row = await db('deliveries')
          .where({ source_event_id: changed!.metadata.eventId })
          .first<{ body: string }>('body');
        return row && !row.body.includes('7912345000') && (JSON.parse(row.body) as Record<string, unknown>);
      });
      expect(body).toMatchObject({
        type: 'client.phone_changed',
        old_phone: '',
        new_phone: '',
        links_moved: 2,
      });
    } finally {
      await db.destroy();
    }
  });

  it("keeps the endpoint's answer in the attempt log only, never in an event, and blanks it and the request's metadata once the person of the message is forgotten", async () => {
    const phone = '79123450003';
    // An endpoint that answers with what it knows of the person (an echo of a body, a name, a number).
    const path = receiver.endpoint((_req, res) => void res.writeHead(200).end(`noted for +${phone}`));
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const keys = registryPersonKeys({ address: registry.grpc, token: INTERNAL_TOKEN });
    const sent = messageSent(companyId);
    const [accepted] = await sealRecords(keys, [
      newEvent<MessageEvent>({
        eventId: randomUUID(),
        occurredAt: new Date(),
        companyId,
        streamId: sent.metadata.streamId,
        producer: 'gateway',
        event: {
          $case: 'messageAccepted',
          value: {
            phoneNumber: phone,
            text: 'hi',
            messenger: 1,
            botName: '',
            buttons: [],
            apiKeyId: 'k',
            idempotencyKey: '',
            requestMetadata: { entries: { customer: 'Ivan Petrov' } },
          },
        },
      }),
    ]);
    keys.close();
    await publishMessages(publisher, [accepted!, sent]);
    const delivered = await untilAttempts(sent.metadata.streamId, 1);
    expect(delivered.attempt_log[0]!.response_excerpt).toBe(`noted for +${phone}`);
    // The message.status echoes the metadata the request carried (sealed in MessageAccepted).
    const [echoed] = receiver.at(path);
    expect(JSON.parse(echoed!.body)).toMatchObject({ state: 'sent', metadata: { customer: 'Ivan Petrov' } });
    const [attempted] = await eventually('WebhookAttempted', () => {
      const mine = webhookEvents.events.filter((e) => e.metadata.streamId === delivered.webhook_id);
      return mine.length > 0 && mine;
    });
    expect(attempted!.event).toMatchObject({
      $case: 'webhookAttempted',
      value: { statusCode: 200, responseExcerpt: '' },
    });

    const forgotten = await registry.admin<{ subject_id: string }>(
      'POST',
      `/companies/${companyId}/clients/${phone}/forget`,
    );
    await publisher.publish([
      {
        topic: topics.client,
        key: companyId,
        record: newEvent<ClientEvent>({
          eventId: randomUUID(),
          occurredAt: new Date(),
          companyId,
          streamId: companyId,
          producer: 'client-registry',
          event: { $case: 'clientForgotten', value: { subjectId: forgotten.body.subject_id } },
        }),
      },
    ]);
    const after = await eventually('the answer blanked', async () => {
      const d = await deliveryOf(sent.metadata.streamId);
      return d?.attempt_log[0]?.response_excerpt === '' && d;
    });
    expect(after.attempt_log[0]).toMatchObject({ status_code: 200, outcome: 'succeeded' });
    expect(after.payload).toMatchObject({ metadata: {} });
    const db = await openDatabase({ url: databaseUrl, schema: SCHEMA });
    try {
      expect(await db('request_metadata').where({ request_id: sent.metadata.streamId })).toEqual([]);
    } finally {
      await db.destroy();
    }
  });

  it('signs with both secrets while one is rotated out', async () => {
    const path = receiver.endpoint();
    const { companyId, secret: old } = await registry.company(`${receiver.url}${path}`, receiver);
    const rotated = await registry.admin<{ secret: string }>(
      'POST',
      `/companies/${companyId}/webhook/rotate-secret`,
    );
    receiver.verifyWith(path, [old, rotated.body.secret]);
    await publishMessages(publisher, [messageSent(companyId)]);
    const [got] = await eventually('a webhook', () => receiver.at(path).length > 0 && receiver.at(path));
    expect(got!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(got!.verified).toBe(true);
  });
});

describe('retries', () => {
  it('retries a flaky endpoint on the schedule as the clock moves, with the same webhook-id', async () => {
    const path = receiver.endpoint(
      (_req, res, nth) => void res.writeHead(nth <= 2 ? 500 : 200).end(`try ${nth}`),
    );
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const sent = messageSent(companyId);
    await publishMessages(publisher, [sent]);
    const first = await untilAttempts(sent.metadata.streamId, 1);
    expect(first).toMatchObject({ status: 'pending', attempts: 1 });
    const t1 = new Date(first.attempt_log[0]!.attempted_at).getTime();
    expect(new Date(first.next_attempt_at!).getTime() - t1).toBe(5_000);
    expect(first.attempt_log[0]).toMatchObject({
      status_code: 500,
      outcome: 'retryable',
      response_excerpt: 'try 1',
    });

    clock.advance(5_000);
    const second = await untilAttempts(sent.metadata.streamId, 2);
    const t2 = new Date(second.attempt_log[1]!.attempted_at).getTime();
    expect(new Date(second.next_attempt_at!).getTime() - t2).toBe(300_000);
    clock.advance(300_000);
    const third = await untilAttempts(sent.metadata.streamId, 3);
    expect(third).toMatchObject({ status: 'delivered', attempts: 3, next_attempt_at: null });
    expect(third.attempt_log.map((a) => [a.attempt, a.status_code, a.outcome])).toEqual([
      [1, 500, 'retryable'],
      [2, 500, 'retryable'],
      [3, 200, 'succeeded'],
    ]);
    const got = receiver.at(path);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    expect(got.every((r) => r.verified)).toBe(true);
  });

  it('honours Retry-After on 429 and 503, and waits at least a minute after a timeout', async () => {
    const limited = receiver.endpoint((_req, res) => void res.writeHead(429, { 'retry-after': '120' }).end());
    const unavailable = receiver.endpoint(
      (_req, res) => void res.writeHead(503, { 'retry-after': '900' }).end(),
    );
    const slow = receiver.endpoint(() => undefined);
    const ids = [];
    for (const path of [limited, unavailable, slow]) {
      const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
      const sent = messageSent(companyId);
      ids.push(sent.metadata.streamId);
      await publishMessages(publisher, [sent]);
    }
    const waits = [];
    for (const id of ids) {
      const d = await untilAttempts(id, 1);
      const a = d.attempt_log[0]!;
      waits.push([
        a.status_code,
        (new Date(a.next_attempt_at!).getTime() - Date.parse(a.attempted_at)) / 1000,
      ]);
    }
    expect(waits[0]).toEqual([429, 120]);
    expect(waits[1]).toEqual([503, 900]);
    // Timed out after WEBHOOK_TIMEOUT_MS (8 s): no status, and the wait is the 60 s penalty, not 5 s.
    expect(waits[2]![0]).toBe(0);
    expect(waits[2]![1]).toBeGreaterThanOrEqual(60);
    expect((await deliveryOf(ids[2]!))!.attempt_log[0]!.error).toBe('timed out');
  });

  it('gives up after the last attempt of the schedule', async () => {
    const path = receiver.endpoint((_req, res) => void res.writeHead(500).end());
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const sent = messageSent(companyId);
    await publishMessages(publisher, [sent]);
    const steps = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];
    for (let i = 0; i < steps.length; i++) {
      await untilAttempts(sent.metadata.streamId, i + 1);
      clock.advance(steps[i]! * 1000);
    }
    const last = await untilAttempts(sent.metadata.streamId, 8);
    expect(last).toMatchObject({ status: 'failed', attempts: 8, next_attempt_at: null });
    expect(last.last_error).toMatch(/no retries left after 8 attempts/);
    const abandoned = await eventually('WebhookDeliveryAbandoned', () =>
      webhookEvents.events.find(
        (e) => e.metadata.streamId === last.webhook_id && e.event.$case === 'webhookDeliveryAbandoned',
      ),
    );
    expect(abandoned.event.value).toMatchObject({ attempts: 8 });
    expect(receiver.at(path)).toHaveLength(8);
  });
});

describe('what endpoints answer', () => {
  it('NUL and controls, bytes that are no UTF-8, ten megabytes: clean and bounded in the attempt log, absent from its event', async () => {
    // Whatever the codec would have had to clean: the dispatcher is to hand it clean text itself.
    const codecCleaned: UncleanText[] = [];
    const stopListening = onUncleanText((found) => codecCleaned.push(found));
    const answers: [string, Buffer][] = [
      ['controls', Buffer.from('boom\u0000 \u0007 \u001b[31m \ud800 \ufffe end')],
      ['broken', Buffer.concat([Buffer.from('bad '), Buffer.from([0xff, 0xc0, 0x80, 0xed, 0xa0, 0x80])])],
      ['ten megabytes', Buffer.alloc(10 * 1024 * 1024, 'boom\u0000')],
    ];
    for (const [what, body] of answers) {
      const path = receiver.endpoint((_req, res) => void res.writeHead(500).end(body));
      const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
      const sent = messageSent(companyId);
      await publishMessages(publisher, [sent]);
      const [entry] = (await untilAttempts(sent.metadata.streamId, 1)).attempt_log;
      const attempted = await eventually(`WebhookAttempted (${what})`, () =>
        webhookEvents.events.find(
          (e) => e.metadata.companyId === companyId && e.event.$case === 'webhookAttempted',
        ),
      );
      const excerpt =
        attempted.event.$case === 'webhookAttempted' ? attempted.event.value.responseExcerpt : '';
      expect(isCleanText(entry!.response_excerpt), what).toBe(true);
      expect(entry!.response_excerpt, what).toContain('\ufffd');
      expect(entry!.response_excerpt.length, what).toBeLessThanOrEqual(2_048);
      // The answer may echo personal data: the event carries none of it, the attempt log (which forget reaches) does.
      expect(excerpt, what).toBe('');
    }
    stopListening();
    expect(codecCleaned).toEqual([]);
  });
});

describe('endpoints that go away', () => {
  it('410 disables the endpoint in the registry; later notifications wait for re-enable and recover', async () => {
    let gone = true;
    const disabledBefore = await counter('mds_webhook_endpoints_disabled_total', 'reason', 'gone');
    const path = receiver.endpoint((_req, res) => void res.writeHead(gone ? 410 : 200).end());
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const first = messageSent(companyId);
    await publishMessages(publisher, [first]);
    const d = await untilAttempts(first.metadata.streamId, 1);
    expect(d).toMatchObject({ status: 'failed' });
    expect(d.attempt_log[0]).toMatchObject({ status_code: 410, outcome: 'gone' });
    await eventually(
      'endpoint disabled',
      async () =>
        !(await unary(registry.client, 'getWebhookEndpoint', { companyId, endpointId: '' })).enabled,
    );
    const view = await registry.admin<{ webhook: { disabled_reason: string } }>(
      'GET',
      `/companies/${companyId}`,
    );
    expect(view.body.webhook.disabled_reason).toMatch(/410 Gone/);
    await eventually(
      'counted as disabled (gone)',
      async () =>
        (await counter('mds_webhook_endpoints_disabled_total', 'reason', 'gone')) === disabledBefore + 1,
    );

    const second = messageSent(companyId);
    await publishMessages(publisher, [second]);
    const skipped = await untilAttempts(second.metadata.streamId, 1);
    expect(skipped).toMatchObject({ status: 'failed' });
    expect(skipped.attempt_log[0]).toMatchObject({
      status_code: 0,
      outcome: 'gave_up',
      error: 'the webhook endpoint is disabled',
    });
    expect(receiver.at(path)).toHaveLength(1);

    // Re-enabled through the registry, then every failed delivery since T is recovered.
    gone = false;
    expect((await registry.admin('POST', `/companies/${companyId}/webhook/enable`)).status).toBe(200);
    const recover = () =>
      dispatcher.admin<{ recovered: number }>('POST', `/companies/${companyId}/recover`, {
        since: new Date(clock.at.getTime() - 60_000).toISOString(),
      });
    expect(await recover()).toMatchObject({ status: 202, body: { recovered: 2 } });
    // The dispatcher hears of the enable from the account log a moment later: what was tried before that
    // failed again, and is recovered again.
    const ids = [first.metadata.streamId, second.metadata.streamId];
    const after = await eventually('both recovered and delivered', async () => {
      const ds = await Promise.all(ids.map(deliveryOf));
      if (ds.some((d) => d?.status === 'failed')) await recover();
      return ds.every((d) => d?.status === 'delivered') && ds;
    });
    for (const d of after) {
      expect(d!.attempt_log.at(-1)).toMatchObject({ trigger: 'manual', status_code: 200 });
    }
  });

  it('disables an endpoint whose every attempt failed for 5 days', async () => {
    const disabledBefore = await counter('mds_webhook_endpoints_disabled_total', 'reason', 'failing');
    const path = receiver.endpoint((_req, res) => void res.writeHead(502).end());
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const first = messageSent(companyId);
    await publishMessages(publisher, [first]);
    await untilAttempts(first.metadata.streamId, 1);
    clock.advance(4 * 24 * 3_600_000);
    const second = messageSent(companyId);
    await publishMessages(publisher, [second]);
    await untilAttempts(second.metadata.streamId, 1);
    expect((await unary(registry.client, 'getWebhookEndpoint', { companyId, endpointId: '' })).enabled).toBe(
      true,
    );
    clock.advance(24 * 3_600_000);
    const third = messageSent(companyId);
    await publishMessages(publisher, [third]);
    await untilAttempts(third.metadata.streamId, 1);
    await eventually(
      'auto-disabled',
      async () =>
        !(await unary(registry.client, 'getWebhookEndpoint', { companyId, endpointId: '' })).enabled,
    );
    const view = await registry.admin<{ webhook: { disabled_reason: string } }>(
      'GET',
      `/companies/${companyId}`,
    );
    expect(view.body.webhook.disabled_reason).toMatch(/every attempt failed since/);
    // At least this one: the five days also run out for other tests' failing endpoints.
    await eventually(
      'counted as disabled (failing)',
      async () =>
        (await counter('mds_webhook_endpoints_disabled_total', 'reason', 'failing')) >= disabledBefore + 1,
    );
  });

  it('refuses addresses outside the allowlist when connecting, and gives up', async () => {
    const path = receiver.endpoint();
    const port = new URL(receiver.url).port;
    const { companyId } = await registry.company(`http://127.0.0.2:${port}${path}`);
    const sent = messageSent(companyId);
    await publishMessages(publisher, [sent]);
    const d = await untilAttempts(sent.metadata.streamId, 1);
    expect(d).toMatchObject({ status: 'failed' });
    expect(d.attempt_log[0]).toMatchObject({ status_code: 0, outcome: 'gave_up' });
    expect(d.attempt_log[0]!.error).toMatch(/refused 127\.0\.0\.2: .*loopback/);
    expect(receiver.at(path)).toHaveLength(0);
  });
});

describe('isolation', () => {
  it('never has more than its slots open to one endpoint while many companies are busy at once', async () => {
    const open = new Map<string, number>();
    const most = new Map<string, number>();
    const answerSoon: Behaviour = (req, res) => {
      const path = req.url!;
      open.set(path, (open.get(path) ?? 0) + 1);
      most.set(path, Math.max(most.get(path) ?? 0, open.get(path)!));
      // Answered a little later, so slots free up while claims are running.
      setTimeout(() => {
        open.set(path, open.get(path)! - 1);
        res.writeHead(200).end();
      }, 3);
    };
    const paths = Array.from({ length: 6 }, () => receiver.endpoint(answerSoon));
    const companies = await Promise.all(
      paths.map((path) => registry.company(`${receiver.url}${path}`, receiver)),
    );
    await publishMessages(
      publisher,
      Array.from({ length: 360 }, (_, i) => messageSent(companies[i % companies.length]!.companyId)),
    );
    await eventually('all delivered', () => paths.every((path) => receiver.at(path).length >= 60));
    for (const path of paths) expect(most.get(path)).toBeLessThanOrEqual(16);
    expect(paths.map((path) => receiver.at(path).length)).toEqual(paths.map(() => 60));
  });

  it('a slow endpoint holds only its own slots: other companies are delivered meanwhile', async () => {
    const held: (() => void)[] = [];
    const slowPath = receiver.endpoint((_req, res) => {
      held.push(() => res.writeHead(200).end());
    });
    const fastPath = receiver.endpoint();
    const slow = await registry.company(`${receiver.url}${slowPath}`, receiver);
    const fast = await registry.company(`${receiver.url}${fastPath}`, receiver);
    await publishMessages(
      publisher,
      Array.from({ length: 40 }, () => messageSent(slow.companyId)),
    );
    await eventually('slow endpoint busy', () => held.length >= 16);
    await publishMessages(
      publisher,
      Array.from({ length: 40 }, () => messageSent(fast.companyId)),
    );
    await eventually('fast endpoint served', () => receiver.at(fastPath).length >= 40);
    // Every slow request is still unanswered, and no more than its slots were opened.
    expect(receiver.at(slowPath).length).toBe(16);
    for (const answer of held) answer();
  });
});

describe('the admin API', () => {
  it('needs its token and answers bad input with problems', async () => {
    const bare = await dispatcher.admin('GET', `/deliveries/${randomUUID()}`, undefined, 'wrong-token-wrong');
    expect(bare.status).toBe(401);
    expect((await dispatcher.admin('GET', `/deliveries/${randomUUID()}`)).body).toMatchObject({
      status: 404,
      code: 'delivery_not_found',
    });
    expect((await dispatcher.admin('GET', '/deliveries/nonsense')).status).toBe(404);
    expect((await dispatcher.admin('POST', `/deliveries/${randomUUID()}/resend`)).status).toBe(404);
    const bad = await dispatcher.admin<{ code: string; errors: { pointer: string; code: string }[] }>(
      'POST',
      `/companies/${randomUUID()}/recover`,
      { since: 'yesterday', extra: 1 },
    );
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('validation_failed');
    expect(bad.body.errors.map((e) => e.pointer).sort()).toEqual(['#/extra', '#/since']);
    const backwards = await dispatcher.admin<{ errors: { pointer: string }[] }>(
      'POST',
      `/companies/${randomUUID()}/recover`,
      { since: '2026-11-21T10:00:00Z', until: '2026-11-21T09:00:00Z' },
    );
    expect(backwards.status).toBe(422);
    expect(backwards.body.errors[0]!.pointer).toBe('#/until');
    expect(
      (await dispatcher.admin('POST', '/companies/x/recover', { since: '2026-11-21T10:00:00Z' })).status,
    ).toBe(404);
  });

  it('resends one delivered message as a manual attempt with the same webhook-id', async () => {
    const path = receiver.endpoint();
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const sent = messageSent(companyId);
    await publishMessages(publisher, [sent]);
    const d = await untilAttempts(sent.metadata.streamId, 1);
    const resent = await dispatcher.admin('POST', `/deliveries/${d.webhook_id}/resend`);
    expect(resent.status).toBe(202);
    const after = await untilAttempts(sent.metadata.streamId, 2);
    expect(after.attempt_log.map((a) => a.trigger)).toEqual(['scheduled', 'manual']);
    expect(new Set(receiver.at(path).map((r) => r.headers['webhook-id']))).toEqual(new Set([d.webhook_id]));
  });
});

describe('test events (for the dashboard)', () => {
  it('sends one signed webhook.test now and answers what was sent and what came back', async () => {
    const path = receiver.endpoint((_req, res) => void res.writeHead(200).end('thanks'));
    const { companyId } = await registry.company(`${receiver.url}${path}`, receiver);
    const sent = await dispatcher.admin<{
      webhook_id: string;
      request: { url: string; headers: Record<string, string>; body: string };
      response: { outcome: string; status_code: number; excerpt: string; latency_ms: number };
    }>('POST', `/companies/${companyId}/test-event`);
    expect(sent.status).toBe(200);
    expect(sent.body.request.url).toBe(`${receiver.url}${path}`);
    expect(JSON.parse(sent.body.request.body)).toMatchObject({ type: 'webhook.test' });
    expect(sent.body.response).toMatchObject({ outcome: 'succeeded', status_code: 200, excerpt: 'thanks' });
    const got = receiver.at(path);
    expect(got).toHaveLength(1);
    expect(got[0]!.verified).toBe(true);
    expect(got[0]!.headers['webhook-id']).toBe(sent.body.webhook_id);

    const failing = receiver.endpoint((_req, res) => void res.writeHead(500).end('broken'));
    const other = await registry.company(`${receiver.url}${failing}`, receiver);
    const refused = await dispatcher.admin<{ response: { outcome: string; status_code: number } }>(
      'POST',
      `/companies/${other.companyId}/test-event`,
    );
    expect(refused.body.response).toMatchObject({ outcome: 'failed', status_code: 500 });

    const bare = await registry.admin<{ company_id: string }>('POST', '/companies', { name: 'No hook' });
    const none = await dispatcher.admin<{ code: string }>(
      'POST',
      `/companies/${bare.body.company_id}/test-event`,
    );
    expect([none.status, none.body.code]).toEqual([409, 'webhook_not_configured']);
    expect((await dispatcher.admin('POST', '/companies/nope/test-event')).status).toBe(404);
  });
});

describe('signatures', () => {
  it('every webhook this suite received verifies with the standardwebhooks library', () => {
    expect(receiver.received.length).toBeGreaterThan(100);
    expect(receiver.received.filter((r) => !r.verified).map((r) => r.path)).toEqual([]);
  });
});
