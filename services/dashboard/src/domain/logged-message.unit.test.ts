import {
  Messenger,
  newEvent,
  type DeliveryEvent,
  type MessageEvent,
  type MessengerName,
} from '@mds/contracts';
import { foldState } from '@mds/message-state';
import { describe, expect, it } from 'vitest';
import {
  changesLoggedMessage,
  decidedBy,
  foldLoggedMessages,
  newLoggedMessage,
  type LoggedMessage,
  type LoggedMessageEvent,
} from './logged-message.js';
import { projectEvent } from './projection.js';

const messageId = '0b0f6a4e-52d5-4c3f-9a43-5e1c2f7d9a10';
let events = 0;
const eventId = () => `e${++events}`;
const at = (seconds: number) => new Date(Date.UTC(2026, 10, 21, 12) + seconds * 1000);

/** The events of one message, as the services write them and the dashboard projects them. */
function event(seconds: number, value: NonNullable<MessageEvent['event']>) {
  return newEvent<MessageEvent>({
    eventId: eventId(),
    occurredAt: at(seconds),
    companyId: 'c1',
    streamId: messageId,
    producer: 'test',
    event: value,
  });
}
const accepted = (seconds: number, messenger: Messenger = Messenger.MESSENGER_MAX) =>
  event(seconds, {
    $case: 'messageAccepted',
    value: {
      phoneNumber: '79123456789',
      text: 'Your order has shipped',
      messenger,
      botName: 'shop',
      buttons: [],
      apiKeyId: 'k1',
      idempotencyKey: '',
    },
  });
const sent = (seconds: number, botId = 'bot-sent') =>
  event(seconds, {
    $case: 'messageSent',
    value: { botId, providerMessageId: '42', sentAt: at(seconds - 0.5), attempts: 2 },
  });
const failed = (seconds: number, errorCode = 'BOT_BLOCKED_BY_USER') =>
  event(seconds, {
    $case: 'messageDeliveryFailed',
    value: { errorCode, errorDescription: 'no', failedAt: at(seconds), attempts: 1, botId: '' },
  });
const routed = (seconds: number, botId: string, chatId = '7') =>
  newEvent<DeliveryEvent>({
    eventId: eventId(),
    occurredAt: at(seconds),
    companyId: 'c1',
    streamId: botId,
    producer: 'test',
    event: {
      $case: 'deliveryRequested',
      value: {
        messageId,
        chat: { messenger: Messenger.MESSENGER_MAX, botId, chatId, userId: chatId },
        botName: 'shop',
        text: '',
        buttons: [],
      },
    },
  });

const projected = (...records: Parameters<typeof projectEvent>[0][]): LoggedMessageEvent[] =>
  records.map((r) => projectEvent(r)!).filter(changesLoggedMessage);
const fold = (events: LoggedMessageEvent[], rows = new Map<string, LoggedMessage>()) =>
  foldLoggedMessages(rows, events).get(messageId)!;

describe("a message's row in the log", () => {
  it('given an acceptance, a routing and a send: sent through the bot that sent it, sorted by its acceptance', () => {
    const row = fold(projected(accepted(0), routed(1, 'bot-routed'), sent(3)));
    expect(row).toMatchObject({
      companyId: 'c1',
      phone: '79123456789',
      text: 'Your order has shipped',
      apiKeyId: 'k1',
      chatId: '7',
      routedAt: at(1),
      sortAt: at(0),
    });
    expect(row.lifecycle).toMatchObject({
      status: 'sent',
      messenger: 'max' satisfies MessengerName,
      botName: 'shop',
      botId: 'bot-sent',
      acceptedAt: at(0),
      finishedAt: at(2.5),
      attempts: 2,
      errorCode: null,
    });
  });

  it('given an outcome, a later one changes nothing: the first outcome decides, whichever it is', () => {
    const sentFirst = fold(projected(accepted(0), sent(2), failed(3)));
    expect(sentFirst.lifecycle).toMatchObject({ status: 'sent', errorCode: null, finishedAt: at(1.5) });
    const failedFirst = fold(projected(accepted(0), failed(2), sent(3)));
    expect(failedFirst.lifecycle).toMatchObject({
      status: 'failed',
      errorCode: 'BOT_BLOCKED_BY_USER',
      finishedAt: at(2),
    });
  });

  it('given an outcome read before its acceptance (another topic): decided, then filled in and sorted by the acceptance', () => {
    const early = fold(projected(sent(3)));
    expect(early).toMatchObject({ sortAt: at(3), phone: null });
    expect(early.lifecycle).toMatchObject({ status: 'sent', messenger: null, acceptedAt: null });
    const whole = fold(projected(accepted(0)), new Map([[messageId, early]]));
    expect(whole).toMatchObject({ sortAt: at(0), phone: '79123456789' });
    expect(whole.lifecycle).toMatchObject({ status: 'sent', messenger: 'max', acceptedAt: at(0) });
  });

  it('the first routing decides where it went; a bot the outcome named stays', () => {
    const twice = fold(projected(accepted(0), routed(1, 'bot-a', '1'), routed(2, 'bot-b', '2')));
    expect(twice).toMatchObject({ chatId: '1', routedAt: at(1), lifecycle: { botId: 'bot-a' } });
    const sentThenRouted = fold(projected(accepted(0), sent(3, 'bot-sent'), routed(1, 'bot-routed')));
    expect(sentThenRouted.lifecycle.botId).toBe('bot-sent');
    const failedWithoutBot = fold(projected(accepted(0), routed(1, 'bot-routed'), failed(3)));
    expect(failedWithoutBot.lifecycle.botId).toBe('bot-routed');
  });

  it("keeps the read API's lifecycle: the same events give the state @mds/message-state folds", () => {
    const events = [accepted(0, Messenger.MESSENGER_TELEGRAM), failed(2, 'CHAT_NOT_FOUND'), sent(4)];
    const state = foldState(events)!;
    const { lifecycle } = fold(projected(...events));
    expect({
      status: lifecycle.status,
      messenger: lifecycle.messenger,
      botName: lifecycle.botName,
      botId: lifecycle.botId,
      errorCode: lifecycle.errorCode,
      attempts: lifecycle.attempts,
      acceptedAt: lifecycle.acceptedAt?.toISOString(),
      finishedAt: lifecycle.finishedAt?.toISOString(),
    }).toEqual({
      status: state.status,
      messenger: state.messenger,
      botName: state.botName,
      botId: state.botId,
      errorCode: state.errorCode,
      attempts: state.attempts,
      acceptedAt: state.acceptedAt,
      finishedAt: state.finishedAt,
    });
  });

  it('folds batch by batch as at once, leaves the rows it was given as they were, and says which batch decided', () => {
    const events = projected(accepted(0), routed(1, 'bot-a'), sent(3), failed(4));
    const once = fold(events);
    const firstBatch = foldLoggedMessages(new Map(), events.slice(0, 2));
    const frozen = structuredClone(firstBatch.get(messageId)!);
    const secondBatch = foldLoggedMessages(firstBatch, events.slice(2));
    expect(firstBatch.get(messageId)).toEqual(frozen);
    expect(secondBatch.get(messageId)).toEqual(once);
    expect(decidedBy(undefined, firstBatch.get(messageId)!)).toBe(false);
    expect(decidedBy(firstBatch.get(messageId), secondBatch.get(messageId)!)).toBe(true);
    expect(decidedBy(secondBatch.get(messageId), fold(events.slice(3), secondBatch))).toBe(false);
  });

  it('starts new, with the first event naming it as its time and company', () => {
    const [first] = projected(routed(5, 'bot-a'));
    expect(newLoggedMessage(first!)).toMatchObject({
      messageId,
      companyId: 'c1',
      sortAt: at(5),
      routedAt: null,
      lifecycle: { status: 'new', acceptedAt: null, finishedAt: null, botId: null },
    });
  });
});
