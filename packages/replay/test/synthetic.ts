import { randomUUID } from 'node:crypto';
import {
  Messenger,
  newEvent,
  topics,
  type ClientRequestEvent,
  type Complete,
  type MessageEvent,
} from '@mds/contracts';
import type { OutgoingEvent } from '@mds/kafka';

const BOTS = ['', 'shop', 'support'];
const FAILURES = ['CLIENT_NOT_FOUND', 'BOT_BLOCKED_BY_USER', 'PROVIDER_ERROR'];

/**
 * The events of `count` messages as the gateway, client-registry and the senders write them: every
 * message accepted, then (by its index) sent after `i % 1000` ms, failed, or still new. Deterministic
 * apart from ids, so tests can count what to expect.
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
    events.push({
      topic: topics.message,
      key: id,
      record: record(acceptedAt, {
        $case: 'messageAccepted',
        value: {
          phoneNumber: '79123456789',
          text: `message ${i}`,
          messenger: i % 2 ? Messenger.MESSENGER_MAX : Messenger.MESSENGER_TELEGRAM,
          botName: BOTS[i % BOTS.length]!,
          buttons: [],
          apiKeyId: 'key',
          idempotencyKey: '',
        },
      }),
    });
    const outcome = i % 10;
    if (outcome < 7) {
      const sentAt = new Date(acceptedAt.getTime() + (i % 1000));
      events.push({
        topic: topics.message,
        key: id,
        record: record(sentAt, {
          $case: 'messageSent',
          value: { botId: `bot-${i % 3}`, providerMessageId: String(i), sentAt, attempts: 1 },
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
