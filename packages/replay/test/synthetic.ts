import { randomUUID } from 'node:crypto';
import {
  AttemptOutcome,
  Messenger,
  newEvent,
  topics,
  UnreachableReason,
  type AccountEvent,
  type BotUpdateEvent,
  type ClientEvent,
  type ClientRequestEvent,
  type Complete,
  type MessageEvent,
  type StreamRecord,
  type TopicSpec,
  type WebhookEvent,
} from '@mds/contracts';
import type { OutgoingEvent } from '@mds/kafka';

const BOTS = ['', 'shop', 'support'];
const FAILURES = ['CLIENT_NOT_FOUND', 'BOT_BLOCKED_BY_USER', 'PROVIDER_ERROR'];

/**
 * The events of `count` messages as the gateway, client-registry and the senders write them: every
 * message accepted, then (by its index) sent after `i % 1000` ms, failed, or still new; one in ten (i % 10 = 1)
 * with a fallback to Telegram's `shop` bot, its own channel not reaching the person (CLIENT_NOT_FOUND) before
 * Telegram sent it. Deterministic apart from ids, so tests can count what to expect.
 */
export function syntheticMessages(
  count: number,
  o: { companies: string[]; start: Date; stepMs?: number },
): { events: OutgoingEvent<MessageEvent>[]; expected: { sent: number; failed: number; new: number } } {
  const events: OutgoingEvent<MessageEvent>[] = [];
  const expected = { sent: 0, failed: 0, new: 0 };
  const step = o.stepMs ?? 1;
  for (let i = 0; i < count; i++) {
    const id = randomUUID();
    const companyId = o.companies[i % o.companies.length]!;
    const acceptedAt = new Date(o.start.getTime() + i * step);
    const record = (at: Date, event: NonNullable<MessageEvent['event']>): Complete<MessageEvent> =>
      newEvent<MessageEvent>({
        eventId: randomUUID(),
        occurredAt: at,
        companyId,
        streamId: id,
        correlationId: id,
        producer: 'synthetic',
        event,
      });
    const outcome = i % 10;
    const own = {
      messenger: i % 2 ? Messenger.MESSENGER_MAX : Messenger.MESSENGER_TELEGRAM,
      botName: BOTS[i % BOTS.length]!,
    };
    const next = { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop' };
    const fallback = outcome === 1 ? { channel: 0, current: own, next: [next], tried: [] } : undefined;
    events.push({
      topic: topics.message,
      key: id,
      record: record(acceptedAt, {
        $case: 'messageAccepted',
        value: {
          phoneNumber: '79123456789',
          text: `message ${i}`,
          ...own,
          buttons: [],
          apiKeyId: 'key',
          idempotencyKey: '',
          requestMetadata: i % 3 === 0 ? { entries: { order: `o-${i}` } } : undefined,
          fallback,
        },
      }),
    });
    const attempt = fallback && {
      ...own,
      botId: '',
      errorCode: 'CLIENT_NOT_FOUND',
      errorDescription: 'no client with this phone',
      failedAt: new Date(acceptedAt.getTime() + 1),
    };
    if (fallback && attempt)
      events.push({
        topic: topics.message,
        key: id,
        record: record(attempt.failedAt, {
          $case: 'messageAttemptFailed',
          value: { route: fallback, attempt, acceptedAt },
        }),
      });
    if (outcome < 7) {
      const sentAt = new Date(acceptedAt.getTime() + (i % 1000));
      events.push({
        topic: topics.message,
        key: id,
        record: record(sentAt, {
          $case: 'messageSent',
          value: {
            botId: `bot-${i % 3}`,
            providerMessageId: String(i),
            sentAt,
            attempts: 1,
            fallback: attempt && { channel: 1, current: next, next: [], tried: [attempt] },
          },
        }),
      });
      expected.sent++;
    } else if (outcome < 9) {
      const failedAt = new Date(acceptedAt.getTime() + 5);
      const code = FAILURES[i % FAILURES.length]!;
      events.push({
        topic: topics.message,
        key: id,
        record: record(failedAt, {
          $case: 'messageDeliveryFailed',
          value: { errorCode: code, errorDescription: code.toLowerCase(), failedAt, attempts: 1, botId: '' },
        }),
      });
      expected.failed++;
    } else {
      expected.new++;
    }
  }
  return { events, expected };
}

/** A client check, answered. */
export function syntheticCheck(companyId: string, at: Date): OutgoingEvent<ClientRequestEvent>[] {
  const id = randomUUID();
  const record = (event: NonNullable<ClientRequestEvent['event']>) => ({
    topic: topics.clientRequest,
    key: id,
    record: newEvent<ClientRequestEvent>({
      eventId: randomUUID(),
      occurredAt: at,
      companyId,
      streamId: id,
      producer: 'synthetic',
      event,
    }),
  });
  return [
    record({
      $case: 'clientCheckRequested',
      value: { phoneNumber: '79123456789', apiKeyId: 'key', idempotencyKey: '' },
    }),
    record({ $case: 'clientChecked', value: { phoneNumber: '79123456789', exists: false, bots: [] } }),
  ];
}

/**
 * The other streams' events of one company: an account created, a client linked then moved to a new
 * phone and blocked, a contact shared, and two webhook deliveries (one delivered on its second attempt
 * to a.example, one abandoned after failing at b.example).
 */
export function syntheticOthers(companyId: string, at: Date): OutgoingEvent<StreamRecord>[] {
  const out: OutgoingEvent<StreamRecord>[] = [];
  let t = at.getTime();
  const add = <R extends StreamRecord>(topic: TopicSpec<R>, key: string, event: NonNullable<R['event']>) => {
    out.push({
      topic,
      key,
      record: newEvent<R>({
        eventId: randomUUID(),
        occurredAt: new Date(t++),
        companyId,
        streamId: key,
        producer: 'synthetic',
        event,
      }),
    });
  };
  const chat = { messenger: Messenger.MESSENGER_TELEGRAM, botId: 'bot-1', chatId: '1001', userId: '2002' };
  add<AccountEvent>(topics.account, companyId, { $case: 'companyCreated', value: { name: 'Shop' } });
  add<BotUpdateEvent>(topics.botUpdate, 'bot-1', {
    $case: 'contactShared',
    value: { chat, providerUpdateId: '7', phoneNumber: '79120000001' },
  });
  add<ClientEvent>(topics.client, companyId, {
    $case: 'clientLinked',
    value: { phoneNumber: '79120000001', chat },
  });
  add<ClientEvent>(topics.client, companyId, {
    $case: 'clientPhoneChanged',
    value: { oldPhone: '79120000001', newPhone: '79120000002', requestId: 'r1' },
  });
  add<ClientEvent>(topics.client, companyId, {
    $case: 'clientLinkReachabilityChanged',
    value: {
      phoneNumber: '79120000002',
      chat,
      reachable: false,
      reason: UnreachableReason.UNREACHABLE_REASON_BLOCKED,
    },
  });
  const attempt = (id: string, n: number, url: string, statusCode: number, outcome: AttemptOutcome) =>
    add<WebhookEvent>(topics.webhook, id, {
      $case: 'webhookAttempted',
      value: {
        kind: 'message.status',
        subjectId: 'm1',
        attempt: n,
        url,
        statusCode,
        latencyMs: 10 * n,
        outcome,
        error: statusCode === 200 ? '' : `HTTP ${statusCode}`,
        responseExcerpt: '',
        nextAttemptAt: undefined,
        endpointId: '',
      },
    });
  const w1 = randomUUID();
  attempt(w1, 1, 'https://a.example/hook', 503, AttemptOutcome.ATTEMPT_OUTCOME_RETRYABLE);
  attempt(w1, 2, 'https://a.example/hook', 200, AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED);
  add<WebhookEvent>(topics.webhook, w1, {
    $case: 'webhookDelivered',
    value: { kind: 'message.status', subjectId: 'm1', attempts: 2, endpointId: '' },
  });
  const w2 = randomUUID();
  attempt(w2, 1, 'https://b.example/hook', 500, AttemptOutcome.ATTEMPT_OUTCOME_GAVE_UP);
  add<WebhookEvent>(topics.webhook, w2, {
    $case: 'webhookDeliveryAbandoned',
    value: { kind: 'message.status', subjectId: 'm1', attempts: 1, lastError: 'HTTP 500', endpointId: '' },
  });
  return out;
}
