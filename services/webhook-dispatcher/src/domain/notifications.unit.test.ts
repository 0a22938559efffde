import { describe, expect, it } from 'vitest';
import {
  newEvent,
  type ChannelAttempt,
  type ClientRequestEvent,
  type FallbackRoute,
  type MessageEvent,
} from '@mds/contracts';
import { notificationOf, requestMetadataOf } from './notifications.js';

const at = new Date('2026-11-21T12:00:00.123Z');
const message = (event: NonNullable<MessageEvent['event']>) =>
  newEvent<MessageEvent>({
    eventId: '11111111-1111-4111-8111-111111111111',
    occurredAt: new Date('2026-11-21T12:00:01Z'),
    companyId: 'c1',
    streamId: '22222222-2222-4222-8222-222222222222',
    producer: 'test',
    event,
  });
const request = (event: NonNullable<ClientRequestEvent['event']>) =>
  newEvent<ClientRequestEvent>({
    eventId: '33333333-3333-4333-8333-333333333333',
    occurredAt: at,
    companyId: 'c1',
    streamId: '44444444-4444-4444-8444-444444444444',
    producer: 'test',
    event,
  });

describe('notifications', () => {
  it('message.status sent: exactly the spec fields beside type, timestamp in ISO 8601 UTC', () => {
    const n = notificationOf(
      message({
        $case: 'messageSent',
        value: { botId: 'b', providerMessageId: '1', sentAt: at, attempts: 1 },
      }),
    )!;
    expect(n).toMatchObject({
      kind: 'message.status',
      companyId: 'c1',
      subjectId: '22222222-2222-4222-8222-222222222222',
    });
    expect(JSON.stringify(n.body)).toBe(
      '{"type":"message.status","event_id":"22222222-2222-4222-8222-222222222222","timestamp":"2026-11-21T12:00:00.123Z","state":"sent"}',
    );
  });

  it('message.status failed carries error_code and error_description', () => {
    const n = notificationOf(
      message({
        $case: 'messageDeliveryFailed',
        value: {
          errorCode: 'CLIENT_NOT_FOUND',
          errorDescription: 'no client',
          failedAt: at,
          attempts: 0,
          botId: '',
        },
      }),
    )!;
    expect(n.body).toEqual({
      type: 'message.status',
      event_id: '22222222-2222-4222-8222-222222222222',
      timestamp: '2026-11-21T12:00:00.123Z',
      state: 'failed',
      error_code: 'CLIENT_NOT_FOUND',
      error_description: 'no client',
    });
  });

  it('client.check and client.phone_changed share the envelope', () => {
    const check = notificationOf(
      request({
        $case: 'clientChecked',
        value: {
          phoneNumber: '79123456789',
          exists: true,
          bots: [{ messenger: 2, botName: 'shop', reachable: true }],
        },
      }),
    )!;
    expect(check.body).toEqual({
      type: 'client.check',
      event_id: '44444444-4444-4444-8444-444444444444',
      timestamp: '2026-11-21T12:00:00.123Z',
      phone_number: '79123456789',
      exists: true,
      bots: [{ service: 'max', bot_name: 'shop', reachable: true }],
    });
    const changed = notificationOf(
      request({
        $case: 'phoneChanged',
        value: { oldPhone: '79123456789', newPhone: '79123456780', linksMoved: 2 },
      }),
    )!;
    expect(changed.body).toMatchObject({ type: 'client.phone_changed', state: 'changed', links_moved: 2 });
    const rejected = notificationOf(
      request({ $case: 'phoneChangeRejected', value: { errorCode: 'SAME_PHONE', errorDescription: 'same' } }),
    )!;
    expect(rejected.body).toMatchObject({
      type: 'client.phone_changed',
      state: 'failed',
      error_code: 'SAME_PHONE',
    });
  });

  it("echoes the request's metadata last, and only when it carried some", () => {
    const sent = message({
      $case: 'messageSent',
      value: { botId: 'b', providerMessageId: '1', sentAt: at, attempts: 1 },
    });
    expect(JSON.stringify(notificationOf(sent, { order_id: '42' })!.body)).toBe(
      '{"type":"message.status","event_id":"22222222-2222-4222-8222-222222222222","timestamp":"2026-11-21T12:00:00.123Z","state":"sent","metadata":{"order_id":"42"}}',
    );
    expect(notificationOf(sent, {})!.body).not.toHaveProperty('metadata');
    const check = request({
      $case: 'clientCheckRequested',
      value: {
        phoneNumber: '1',
        apiKeyId: 'k',
        idempotencyKey: '',
        requestMetadata: { entries: { t: '1' } },
      },
    });
    expect(requestMetadataOf(check)).toEqual({ t: '1' });
    expect(
      requestMetadataOf(
        request({
          $case: 'phoneChangeRequested',
          value: {
            oldPhone: '1',
            newPhone: '2',
            apiKeyId: 'k',
            idempotencyKey: '',
            requestMetadata: { entries: {} },
          },
        }),
      ),
    ).toBeUndefined();
    expect(requestMetadataOf(sent)).toBeUndefined();
  });

  describe('a message with a fallback', () => {
    const tried: ChannelAttempt = {
      messenger: 1,
      botName: 'shop_bot',
      botId: 'b1',
      errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
      errorDescription: 'not linked',
      failedAt: at,
    };
    const fallback: FallbackRoute = {
      channel: 1,
      current: { messenger: 2, botName: 'shop_max_bot' },
      next: [],
      tried: [tried],
    };
    it('names the channel that decided it and each tried before it, after the outcome and before metadata', () => {
      const sent = message({
        $case: 'messageSent',
        value: { botId: 'b2', providerMessageId: '1', sentAt: at, attempts: 1, fallback },
      });
      expect(JSON.stringify(notificationOf(sent, { order_id: '42' })!.body)).toBe(
        '{"type":"message.status","event_id":"22222222-2222-4222-8222-222222222222","timestamp":"2026-11-21T12:00:00.123Z","state":"sent","service":"max","bot_name":"shop_max_bot","attempts":[{"service":"telegram","bot_name":"shop_bot","error_code":"CLIENT_NOT_LINKED_TO_BOT"}],"metadata":{"order_id":"42"}}',
      );
    });

    it('omits a bot_name the channel had none of; attempts [] when its own channel decided it', () => {
      const failed = message({
        $case: 'messageDeliveryFailed',
        value: {
          errorCode: 'CLIENT_NOT_FOUND',
          errorDescription: 'no client',
          failedAt: at,
          attempts: 0,
          botId: '',
          fallback: {
            ...fallback,
            tried: [{ ...tried, botName: '', errorCode: 'CLIENT_NOT_FOUND' }],
            current: { messenger: 2, botName: '' },
          },
        },
      });
      expect(notificationOf(failed)!.body).toEqual({
        type: 'message.status',
        event_id: '22222222-2222-4222-8222-222222222222',
        timestamp: '2026-11-21T12:00:00.123Z',
        state: 'failed',
        error_code: 'CLIENT_NOT_FOUND',
        error_description: 'no client',
        service: 'max',
        attempts: [{ service: 'telegram', error_code: 'CLIENT_NOT_FOUND' }],
      });
      const first = message({
        $case: 'messageSent',
        value: {
          botId: 'b',
          providerMessageId: '1',
          sentAt: at,
          attempts: 1,
          fallback: { ...fallback, channel: 0, current: { messenger: 1, botName: 'shop_bot' }, tried: [] },
        },
      });
      expect(notificationOf(first)!.body).toMatchObject({
        service: 'telegram',
        bot_name: 'shop_bot',
        attempts: [],
      });
    });

    it('tells nobody about a channel that could not reach the person (the message goes on)', () => {
      expect(
        notificationOf(
          message({
            $case: 'messageAttemptFailed',
            value: {
              route: {
                ...fallback,
                channel: 0,
                current: { messenger: 1, botName: 'shop_bot' },
                next: [{ messenger: 2, botName: '' }],
                tried: [],
              },
              attempt: tried,
            },
          }),
        ),
      ).toBeUndefined();
    });
  });

  it('tells nobody about accepted messages and requests', () => {
    expect(
      notificationOf(
        message({
          $case: 'messageAccepted',
          value: {
            phoneNumber: '1',
            text: 't',
            messenger: 1,
            botName: '',
            buttons: [],
            apiKeyId: 'k',
            idempotencyKey: '',
          },
        }),
      ),
    ).toBeUndefined();
    expect(
      notificationOf(
        request({
          $case: 'clientCheckRequested',
          value: { phoneNumber: '1', apiKeyId: 'k', idempotencyKey: '' },
        }),
      ),
    ).toBeUndefined();
  });
});
