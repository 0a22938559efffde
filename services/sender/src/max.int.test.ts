import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Messenger,
  topics,
  type BotUpdateEvent,
  type Complete,
  type MessageEvent,
  deliveryTopic,
} from '@mds/contracts';
import { freePort } from '@mds/local-infra';
import { eventually } from '@mds/local-infra/testing';
import {
  deliveryRequest,
  messageAccepted,
  outcomesOf,
  postLargeBody,
  publishAccepted,
  publishDeliveries,
  runSender,
  startSenderStack,
  type Person,
  type SenderStack,
  type SimBot,
} from './test-support/stack.js';

let stack: SenderStack;
let sender: { url: string; stop: () => Promise<void> };
let messages: { events: Complete<MessageEvent>[]; stop: () => Promise<void> };
let updates: { events: Complete<BotUpdateEvent>[]; stop: () => Promise<void> };
let bot: SimBot;

const MAX = Messenger.MESSENGER_MAX;
const startSender = () =>
  runSender('max', {
    ...stack.senderEnv,
    SEND_TIMEOUT_MS: '1500',
    RETRY_BASE_MS: '200',
    RETRY_MAX_MS: '1000',
  });

beforeAll(async () => {
  stack = await startSenderStack();
  [messages, updates] = await Promise.all([stack.collect(topics.message), stack.collect(topics.botUpdate)]);
  bot = await stack.createBot('max', 'main');
  sender = await startSender();
});

afterAll(async () => {
  await sender?.stop();
  await Promise.all([messages?.stop(), updates?.stop()]);
  await stack?.stop();
});

const act = (person: Person, simBot: SimBot, action: string, extra: Record<string, unknown> = {}) =>
  stack.control<{ updates: { chat_id?: number }[] }>('POST', `/people/${person.id}/actions`, {
    action,
    bot_id: simBot.simId,
    ...extra,
  });

/** A person who started the bot, and their MAX dialog with it. */
async function startedPerson(simBot: SimBot = bot) {
  const person = await stack.createPerson();
  const started = await act(person, simBot, 'start');
  const chatId = String(started.updates[0]!.chat_id);
  return {
    person,
    chat: { messenger: MAX, botId: simBot.botId, chatId, userId: String(person.maxUserId) },
  };
}

const outcome = (messageId: string) =>
  eventually(`outcome of ${messageId}`, () => outcomesOf(messages.events, [messageId])[0], 20_000);

const ofPerson = (person: Person) =>
  updates.events.filter((e) => e.event.value.chat?.userId === String(person.maxUserId));

describe('MAX: updates, routing and sending', () => {
  it('reads bot_started and the shared contact, then delivers with link buttons, plain text', async () => {
    const { person } = await startedPerson();
    await act(person, bot, 'share_contact', { phone_format: 'plus' });
    await eventually('the registry links the person', async () => {
      const r = await stack.admin<{ exists: boolean }>(
        'GET',
        `/companies/${stack.companyId}/clients/${person.phone}`,
      );
      return r.body.exists ? r : undefined;
    });
    const buttons = Array.from({ length: 4 }, (_, i) => ({ text: `B${i}`, url: `https://example.com/${i}` }));
    const text = '**plain** <i>text</i>';
    const messageId = await publishAccepted(
      stack,
      messageAccepted(stack.companyId, person.phone, MAX, { text, buttons }),
    );
    const result = await outcome(messageId);
    if (result.event.$case !== 'messageSent') throw new Error(JSON.stringify(result.event));
    expect(result.event.value.providerMessageId).toMatch(/^mid\./);
    const inbox = await stack.control<{
      messages: { text: string; format?: string | null; buttons: unknown[][] }[];
    }>('GET', `/people/${person.id}/messages?bot_id=${bot.simId}`);
    const received = inbox.messages.at(-1)!;
    expect(received.text).toBe(text);
    expect(received.format ?? null).toBeNull();
    expect(received.buttons).toEqual(buttons.map((b) => [b]));
    expect(ofPerson(person).map((e) => e.event.$case)).toEqual(['personStartedBot', 'contactShared']);
  });

  it('ignores someone else’s contact; reads a stop as a block', async () => {
    const { person } = await startedPerson();
    const other = await stack.createPerson();
    await act(person, bot, 'share_contact', { contact: { person_id: other.id } });
    await act(person, bot, 'stop');
    await eventually('the stop is read', () =>
      ofPerson(person).find((e) => e.event.$case === 'personBlockedBot'),
    );
    expect(ofPerson(person).map((e) => e.event.$case)).toEqual(['personStartedBot', 'personBlockedBot']);
  });

  it('a person who stopped the bot: BOT_BLOCKED_BY_USER; an unknown user: CHAT_NOT_FOUND', async () => {
    const { person, chat } = await startedPerson();
    await act(person, bot, 'stop');
    const ids = await publishDeliveries(stack, deliveryTopic('max'), [
      deliveryRequest(stack.companyId, chat),
      deliveryRequest(stack.companyId, { ...chat, userId: '987654321', chatId: '987654321' }),
    ]);
    const codes = await Promise.all(
      ids.map(async (id) => {
        const e = await outcome(id);
        return e.event.$case === 'messageDeliveryFailed' ? e.event.value.errorCode : e.event.$case;
      }),
    );
    expect(codes).toEqual(['BOT_BLOCKED_BY_USER', 'CHAT_NOT_FOUND']);
  });

  it('backs off on 429 (MAX gives no hint) and sends the same message', async () => {
    const { chat } = await startedPerson();
    await stack.control('POST', '/faults', { bot_id: bot.simId, kind: '429', method: 'messages', count: 2 });
    const [messageId] = await publishDeliveries(stack, deliveryTopic('max'), [
      deliveryRequest(stack.companyId, chat),
    ]);
    const result = await outcome(messageId!);
    if (result.event.$case !== 'messageSent') throw new Error(JSON.stringify(result.event));
    expect(result.event.value.attempts).toBe(3);
  });

  it('counts its update polls in the bot’s 30 requests a second: a burst gets no 429', async () => {
    const rated = await stack.createBot('max', 'rated');
    const chats = await Promise.all(
      Array.from({ length: 45 }, () => startedPerson(rated).then((p) => p.chat)),
    );
    const ids = await publishDeliveries(
      stack,
      deliveryTopic('max'),
      chats.map((chat) => deliveryRequest(stack.companyId, chat)),
    );
    await eventually(
      'all sent',
      () => (outcomesOf(messages.events, ids).length === ids.length ? true : undefined),
      30_000,
    );
    expect(outcomesOf(messages.events, ids).every((e) => e.event.$case === 'messageSent')).toBe(true);
    const calls = await stack.control<{ requests: { status: number; method: string }[] }>(
      'GET',
      `/requests?bot_id=${rated.simId}&limit=300`,
    );
    expect(calls.requests.some((r) => r.method.includes('updates'))).toBe(true);
    expect(calls.requests.filter((r) => r.status === 429)).toEqual([]);
  });

  it('resumes from the saved marker after a restart', async () => {
    await sender.stop();
    const person = await stack.createPerson();
    await act(person, bot, 'start');
    await act(person, bot, 'share_contact');
    sender = await startSender();
    await eventually('both updates read after the restart', () =>
      ofPerson(person).length >= 2 ? true : undefined,
    );
    await sender.stop();
    sender = await startSender();
    await act(person, bot, 'stop');
    await eventually('the stop read', () =>
      ofPerson(person).find((e) => e.event.$case === 'personBlockedBot'),
    );
    expect(ofPerson(person).map((e) => e.event.$case)).toEqual([
      'personStartedBot',
      'contactShared',
      'personBlockedBot',
    ]);
  });

  it('webhook mode: subscribes the bot and takes pushes that carry its secret', async () => {
    await sender.stop();
    const port = await freePort();
    const hooked = await runSender('max', {
      ...stack.senderEnv,
      HTTP_PORT: String(port),
      UPDATES_MODE: 'webhook',
      UPDATES_PUBLIC_URL: `http://127.0.0.1:${port}`,
      UPDATES_WEBHOOK_SECRET: 'max-webhook-secret-for-tests',
    });
    try {
      await eventually('subscribed', async () => {
        const bots = await stack.control<unknown>('GET', `/bots/${bot.simId}`);
        return JSON.stringify(bots).includes(`/updates/${bot.botId}`) ? true : undefined;
      });
      const person = await stack.createPerson();
      await act(person, bot, 'start');
      await eventually('the pushed bot_started is published', () =>
        ofPerson(person).find((e) => e.event.$case === 'personStartedBot'),
      );
      const forged = await fetch(`${hooked.url}/updates/${bot.botId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-max-bot-api-secret': 'wrong-secret' },
        body: JSON.stringify({ update_type: 'bot_started', timestamp: 1, chat_id: 1, user: { user_id: 1 } }),
      });
      expect(forged.status).toBe(401);
      // A wrong secret is refused before the body is read: 5 MB (over the 1 MB body limit, which would
      // answer 413 had it been parsed) gets the 401.
      expect(
        await postLargeBody(
          `${hooked.url}/updates/${bot.botId}`,
          { 'x-max-bot-api-secret': 'wrong' },
          5 * 1024 * 1024,
        ),
      ).toBe(401);
    } finally {
      await hooked.stop();
      sender = await startSender();
    }
  });
});
