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

const TELEGRAM = Messenger.MESSENGER_TELEGRAM;
const senderEnv = (env: Record<string, string> = {}) => ({
  ...stack.senderEnv,
  SEND_TIMEOUT_MS: '1500',
  RETRY_BASE_MS: '200',
  RETRY_MAX_MS: '1000',
  ...env,
});
const startSender = (env: Record<string, string> = {}) => runSender('telegram', senderEnv(env));

beforeAll(async () => {
  stack = await startSenderStack();
  [messages, updates] = await Promise.all([stack.collect(topics.message), stack.collect(topics.botUpdate)]);
  bot = await stack.createBot('telegram', 'main');
  sender = await startSender();
});

afterAll(async () => {
  await sender?.stop();
  await Promise.all([messages?.stop(), updates?.stop()]);
  await stack?.stop();
});

const act = (person: Person, simBot: SimBot, action: string, extra: Record<string, unknown> = {}) =>
  stack.control('POST', `/people/${person.id}/actions`, { action, bot_id: simBot.simId, ...extra });

const chatOf = (person: Person, simBot: SimBot = bot) => ({
  messenger: TELEGRAM,
  botId: simBot.botId,
  chatId: String(person.telegramUserId),
  userId: String(person.telegramUserId),
});

async function startedPerson(simBot: SimBot = bot): Promise<Person> {
  const person = await stack.createPerson();
  await act(person, simBot, 'start');
  return person;
}

async function outcome(messageId: string, timeoutMs = 20_000) {
  return eventually(`outcome of ${messageId}`, () => outcomesOf(messages.events, [messageId])[0], timeoutMs);
}

function failure(e: Complete<MessageEvent>) {
  if (e.event.$case !== 'messageDeliveryFailed') throw new Error(`expected a failure, got ${e.event.$case}`);
  return e.event.value;
}

function sent(e: Complete<MessageEvent>) {
  if (e.event.$case !== 'messageSent') throw new Error(`expected sent, got ${JSON.stringify(e.event)}`);
  return e.event.value;
}

const inbox = (person: Person) =>
  stack.control<{
    messages: { text: string; buttons: { text: string; url: string }[][]; message_id: number }[];
  }>('GET', `/people/${person.id}/messages?bot_id=${bot.simId}`);

const fault = (body: Record<string, unknown>) =>
  stack.control('POST', '/faults', { bot_id: bot.simId, ...body });

describe('the whole path: updates link a person, the registry routes, the sender sends', () => {
  it('reads /start and the shared contact, then delivers a message with buttons as plain text', async () => {
    const person = await startedPerson();
    await act(person, bot, 'share_contact');
    await eventually('the registry links the person', async () => {
      const r = await stack.admin<{ exists: boolean }>(
        'GET',
        `/companies/${stack.companyId}/clients/${person.phone}`,
      );
      return r.body.exists ? r : undefined;
    });
    const text = '*not bold* <b>not html</b> _x_';
    const buttons = [
      { text: 'Open', url: 'https://example.com/a' },
      { text: 'Pay', url: 'https://example.com/b' },
    ];
    const messageId = await publishAccepted(
      stack,
      messageAccepted(stack.companyId, person.phone, TELEGRAM, { text, buttons }),
    );
    const value = sent(await outcome(messageId));
    expect(value.botId).toBe(bot.botId);
    expect(value.attempts).toBe(1);
    const received = (await inbox(person)).messages.at(-1)!;
    expect(received.text).toBe(text);
    expect(String(received.message_id)).toBe(value.providerMessageId);
    expect(received.buttons).toEqual([[buttons[0]], [buttons[1]]]);
    const calls = await stack.control<{ requests: { method: string; params: Record<string, unknown> }[] }>(
      'GET',
      `/requests?bot_id=${bot.simId}&limit=50`,
    );
    const call = calls.requests.find((r) => r.method === 'sendMessage' && r.params.text === text)!;
    expect(call.params.parse_mode).toBeUndefined();
    const kinds = updates.events
      .filter(
        (e) =>
          e.event.$case !== 'personBlockedBot' &&
          e.event.value.chat?.userId === String(person.telegramUserId),
      )
      .map((e) => e.event.$case);
    expect(kinds).toEqual(['personStartedBot', 'contactShared']);
  });

  it('ignores a contact that is not the sender’s own', async () => {
    const person = await startedPerson();
    const other = await stack.createPerson();
    await act(person, bot, 'share_contact', { contact: { person_id: other.id } });
    await act(person, bot, 'send_text', { text: 'marker' });
    const started = await eventually('the start is read', () =>
      updates.events.find(
        (e) =>
          e.event.$case === 'personStartedBot' &&
          e.event.value.chat?.userId === String(person.telegramUserId),
      ),
    );
    expect(started).toBeDefined();
    await new Promise((r) => setTimeout(r, 1_500));
    expect(
      updates.events.filter(
        (e) =>
          e.event.$case === 'contactShared' && e.event.value.chat?.userId === String(person.telegramUserId),
      ),
    ).toEqual([]);
  });
});

describe('failures, each with its code', () => {
  it('a person who blocked the bot: BOT_BLOCKED_BY_USER, and the registry is told', async () => {
    const person = await startedPerson();
    await act(person, bot, 'block');
    const [messageId] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person)),
    ]);
    const value = failure(await outcome(messageId!));
    expect(value.errorCode).toBe('BOT_BLOCKED_BY_USER');
    expect(value.errorDescription).toMatch(/blocked by the user/);
    const told = await eventually('PersonBlockedBot from the failed send', () =>
      updates.events.find(
        (e) => e.event.$case === 'personBlockedBot' && e.event.value.providerUpdateId === `send:${messageId}`,
      ),
    );
    expect(told.event.$case === 'personBlockedBot' && told.event.value.reason).toBe(4); // SEND_REJECTED
  });

  it('a message with a fallback: a blocked bot passes it on while channels are left, the last one ends it naming its route', async () => {
    const person = await startedPerson();
    await act(person, bot, 'block');
    const telegram = { messenger: TELEGRAM, botName: 'main' };
    const first = {
      channel: 0,
      current: telegram,
      next: [{ messenger: Messenger.MESSENGER_MAX, botName: '' }],
      tried: [],
    };
    const [passed] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person), { fallback: first }),
    ]);
    const attemptFailed = await outcome(passed!);
    const attempt = { ...telegram, botId: bot.botId, errorCode: 'BOT_BLOCKED_BY_USER' };
    expect(attemptFailed.event).toMatchObject({
      $case: 'messageAttemptFailed',
      value: { route: first, attempt },
    });
    await eventually('PersonBlockedBot from the failed send', () =>
      updates.events.find(
        (e) => e.event.$case === 'personBlockedBot' && e.event.value.providerUpdateId === `send:${passed}`,
      ),
    );

    const tried =
      attemptFailed.event.$case === 'messageAttemptFailed' ? [attemptFailed.event.value.attempt!] : [];
    const last = { channel: 1, current: telegram, next: [], tried };
    const [ended] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person), { fallback: last }),
    ]);
    expect(failure(await outcome(ended!))).toMatchObject({
      errorCode: 'BOT_BLOCKED_BY_USER',
      fallback: last,
    });
  });

  it('a deactivated account, an unknown chat, a refused button URL and a person who never started the bot', async () => {
    const gone = await startedPerson();
    await stack.control('POST', `/people/${gone.id}/actions`, { action: 'deactivate' });
    const stranger = await stack.createPerson();
    const person = await startedPerson();
    const ids = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(gone)),
      deliveryRequest(stack.companyId, { ...chatOf(person), chatId: '999000111', userId: '999000111' }),
      deliveryRequest(stack.companyId, chatOf(person), {
        buttons: [{ text: 'x', url: 'ftp://example.com' }],
      }),
      deliveryRequest(stack.companyId, chatOf(stranger)),
    ]);
    const codes = await Promise.all(ids.map(async (id) => failure(await outcome(id)).errorCode));
    expect(codes).toEqual([
      'USER_DEACTIVATED',
      'CHAT_NOT_FOUND',
      'INVALID_MESSAGE',
      'CLIENT_NOT_LINKED_TO_BOT',
    ]);
  });

  it('a token the messenger refuses: BOT_MISCONFIGURED', async () => {
    const doomed = await stack.createBot('telegram', 'doomed');
    const person = await startedPerson(doomed);
    await stack.control('DELETE', `/bots/${doomed.simId}`);
    const [messageId] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person, doomed)),
    ]);
    const value = failure(await outcome(messageId!));
    expect(value.errorCode).toBe('BOT_MISCONFIGURED');
    expect(value.attempts).toBe(1);
  });
});

describe('transient failures and flood control', () => {
  it('retries 5xx answers until one goes through', async () => {
    const person = await startedPerson();
    await fault({ kind: '5xx', method: 'sendMessage', count: 2 });
    const [messageId] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person)),
    ]);
    const value = sent(await outcome(messageId!));
    expect(value.attempts).toBe(3);
    expect((await inbox(person)).messages).toHaveLength(1);
  });

  it('never repeats a call that may have been delivered: no answer ends DELIVERY_UNCONFIRMED, one copy at most', async () => {
    // The messenger takes the message and the connection drops before its answer.
    const delivered = await startedPerson();
    await fault({ kind: 'drop-after-delivery', method: 'sendMessage', count: 1 });
    const [first] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(delivered)),
    ]);
    expect(failure(await outcome(first!)).errorCode).toBe('DELIVERY_UNCONFIRMED');
    expect((await inbox(delivered)).messages).toHaveLength(1);
    // The messenger holds the call past the timeout: it may or may not have taken it.
    const held = await startedPerson();
    await fault({ kind: 'timeout', method: 'sendMessage', count: 1, ms: 3_000 });
    const [second] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(held)),
    ]);
    const value = failure(await outcome(second!));
    expect(value.errorCode).toBe('DELIVERY_UNCONFIRMED');
    expect(value.attempts).toBe(1);
  });

  it('fails with PROVIDER_ERROR when the messenger keeps failing until the deadline', async () => {
    const person = await startedPerson();
    await fault({ kind: '5xx', method: 'sendMessage', count: 1_000 });
    try {
      // A deadline a few seconds out: room for several attempts even on a busy machine.
      const [messageId] = await publishDeliveries(stack, deliveryTopic('telegram'), [
        deliveryRequest(stack.companyId, chatOf(person), { deadlineMs: 6_000 }),
      ]);
      const value = failure(await outcome(messageId!));
      expect(value.errorCode).toBe('PROVIDER_ERROR');
      expect(value.attempts).toBeGreaterThan(1);
    } finally {
      // Left over, these faults would fail every later test of this bot.
      await stack.control('DELETE', '/faults');
    }
  });

  it('waits exactly retry_after on a 429, then sends the same message; past the deadline it fails', async () => {
    const person = await startedPerson();
    await fault({ kind: '429', method: 'sendMessage', count: 1, retry_after: 2 });
    const began = Date.now();
    const [messageId] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person)),
    ]);
    const value = sent(await outcome(messageId!));
    expect(value.attempts).toBe(2);
    const sentAt = value.sentAt!.getTime();
    expect(sentAt - began).toBeGreaterThanOrEqual(2_000);

    await fault({ kind: '429', method: 'sendMessage', count: 1, retry_after: 30 });
    const [late] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person), { deadlineMs: 5_000 }),
    ]);
    expect(failure(await outcome(late!)).errorCode).toBe('RATE_LIMITED_PAST_DEADLINE');
  });

  it('never sends a message past its expiry: one that arrives expired, one a 429 holds past it', async () => {
    const person = await startedPerson();
    const [stale] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person), { text: 'stale', expiresInMs: -1_000 }),
    ]);
    expect(failure(await outcome(stale!)).errorCode).toBe('EXPIRED');

    await fault({ kind: '429', method: 'sendMessage', count: 1, retry_after: 30 });
    const [held] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person), { text: 'held', expiresInMs: 5_000 }),
    ]);
    expect(failure(await outcome(held!)).errorCode).toBe('EXPIRED');
    expect((await inbox(person)).messages).toEqual([]);
  });

  it('rides out a 429 storm: every message is sent once the flood ends, none lost or sent twice', async () => {
    const people = await Promise.all(Array.from({ length: 6 }, () => startedPerson()));
    await fault({ kind: '429', method: 'sendMessage', count: 5, retry_after: 1 });
    const ids = await publishDeliveries(
      stack,
      deliveryTopic('telegram'),
      people.map((p) => deliveryRequest(stack.companyId, chatOf(p), { text: `storm ${p.id}` })),
    );
    const results = await Promise.all(ids.map(async (id) => sent(await outcome(id, 30_000))));
    expect(results.reduce((n, r) => n + r.attempts, 0)).toBe(ids.length + 5);
    for (const p of people) expect((await inbox(p)).messages.map((m) => m.text)).toEqual([`storm ${p.id}`]);
  });

  it('a rate-limited bot does not hold up another bot', async () => {
    const slow = await stack.createBot('telegram', 'slow');
    const slowPerson = await startedPerson(slow);
    const fastPerson = await startedPerson();
    await stack.control('POST', '/faults', {
      bot_id: slow.simId,
      kind: '429',
      method: 'sendMessage',
      count: 1,
      retry_after: 4,
    });
    const [held] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(slowPerson, slow)),
    ]);
    await new Promise((r) => setTimeout(r, 500));
    const [quick] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(fastPerson)),
    ]);
    const quickOutcome = sent(await outcome(quick!));
    const heldOutcome = sent(await outcome(held!));
    expect(quickOutcome.sentAt!.getTime()).toBeLessThan(heldOutcome.sentAt!.getTime());
  });

  it('keeps under 30 messages a second per bot and 1 a second per chat: a burst gets no 429', async () => {
    const rated = await stack.createBot('telegram', 'rated');
    const people = await Promise.all(Array.from({ length: 40 }, () => startedPerson(rated)));
    const records = [
      ...people.map((p) => deliveryRequest(stack.companyId, chatOf(p, rated))),
      // Four in a row to one person: the simulator tolerates a burst of 3 at 1/s, we never burst.
      ...Array.from({ length: 4 }, (_, i) =>
        deliveryRequest(stack.companyId, chatOf(people[0]!, rated), { text: `again ${i}` }),
      ),
    ];
    const ids = await publishDeliveries(stack, deliveryTopic('telegram'), records);
    await eventually(
      'all sent',
      () => (outcomesOf(messages.events, ids).length === ids.length ? true : undefined),
      30_000,
    );
    expect(outcomesOf(messages.events, ids).map((e) => e.event.$case)).toEqual(ids.map(() => 'messageSent'));
    const calls = await stack.control<{ requests: { method: string; status: number }[] }>(
      'GET',
      `/requests?bot_id=${rated.simId}&limit=200`,
    );
    expect(calls.requests.filter((r) => r.status === 429)).toEqual([]);
    const again = (
      await stack.control<{ messages: { text: string }[] }>(
        'GET',
        `/people/${people[0]!.id}/messages?bot_id=${rated.simId}`,
      )
    ).messages;
    expect(again.map((m) => m.text).slice(-4)).toEqual(['again 0', 'again 1', 'again 2', 'again 3']);
  });
});

describe('restarts', () => {
  it('resumes reading updates from the saved offset: nothing lost, nothing counted twice', async () => {
    await sender.stop();
    const person = await stack.createPerson();
    await act(person, bot, 'start');
    await act(person, bot, 'share_contact');
    sender = await startSender();
    const mine = () =>
      updates.events.filter(
        (e) =>
          e.event.$case !== 'personBlockedBot' &&
          e.event.value.chat?.userId === String(person.telegramUserId),
      );
    await eventually('both updates read after the restart', () => (mine().length >= 2 ? true : undefined));
    await act(person, bot, 'block');
    await eventually('the block read', () =>
      mine().length >= 2 &&
      updates.events.some(
        (e) =>
          e.event.$case === 'personBlockedBot' &&
          e.event.value.chat?.userId === String(person.telegramUserId),
      )
        ? true
        : undefined,
    );
    await sender.stop();
    sender = await startSender();
    await act(person, bot, 'unblock');
    await eventually('the unblock read', () =>
      updates.events.find(
        (e) =>
          e.event.$case === 'personUnblockedBot' &&
          e.event.value.chat?.userId === String(person.telegramUserId),
      ),
    );
    const all = updates.events.filter((e) => e.event.value.chat?.userId === String(person.telegramUserId));
    expect(all.map((e) => e.event.$case)).toEqual([
      'personStartedBot',
      'contactShared',
      'personBlockedBot',
      'personUnblockedBot',
    ]);
  });

  it('a delivery published while the sender is down is sent once it is back', async () => {
    const person = await startedPerson();
    await sender.stop();
    const [messageId] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person)),
    ]);
    sender = await startSender();
    sent(await outcome(messageId!));
    expect(outcomesOf(messages.events, [messageId!])).toHaveLength(1);
  });

  it('never sends a message given back for a retry whose expiry passed while the sender was down', async () => {
    const person = await startedPerson();
    // One 429: the message is given back to the journal, to be tried again in 4 s, before its expiry.
    await fault({ kind: '429', method: 'sendMessage', count: 1, retry_after: 4 });
    const text = `expires in the journal ${Date.now()}`;
    const [messageId] = await publishDeliveries(stack, deliveryTopic('telegram'), [
      deliveryRequest(stack.companyId, chatOf(person), { text, expiresInMs: 6_000 }),
    ]);
    await eventually('the first call, answered 429', async () => {
      const calls = await stack.control<{ requests: { status: number; params: Record<string, unknown> }[] }>(
        'GET',
        `/requests?bot_id=${bot.simId}&limit=50`,
      );
      return calls.requests.some((r) => r.status === 429 && r.params.text === text) ? true : undefined;
    });
    await sender.stop();
    await new Promise((resolve) => setTimeout(resolve, 6_500));
    sender = await startSender();
    expect(failure(await outcome(messageId!)).errorCode).toBe('EXPIRED');
    expect((await inbox(person)).messages.map((m) => m.text)).not.toContain(text);
  });
});

describe('webhook mode', () => {
  it('takes updates pushed by the messenger with the right secret, and refuses a wrong one', async () => {
    const hooked = await stack.createBot('telegram', 'hooked');
    // One replica owns the bot; a polling one would take it back from the webhook.
    await sender.stop();
    const port = await freePort();
    const webhookSender = await runSender(
      'telegram',
      senderEnv({
        HTTP_PORT: String(port),
        UPDATES_MODE: 'webhook',
        UPDATES_PUBLIC_URL: `http://127.0.0.1:${port}`,
        UPDATES_WEBHOOK_SECRET: 'webhook-secret-for-tests-0000',
      }),
    );
    try {
      const person = await stack.createPerson();
      await eventually('the webhook is set', async () => {
        const info = await stack.control<{ webhook?: { url?: string } } & Record<string, unknown>>(
          'GET',
          `/bots/${hooked.simId}`,
        );
        return JSON.stringify(info).includes(`/updates/${hooked.botId}`) ? true : undefined;
      });
      await act(person, hooked, 'start');
      await eventually('the pushed start is published', () =>
        updates.events.find(
          (e) => e.event.$case === 'personStartedBot' && e.event.value.chat?.botId === hooked.botId,
        ),
      );
      const forged = await fetch(`${webhookSender.url}/updates/${hooked.botId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 'wrong' },
        body: JSON.stringify({
          update_id: 1,
          message: {
            message_id: 1,
            date: 0,
            chat: { id: 5, type: 'private' },
            from: { id: 5, is_bot: false, first_name: 'x' },
            text: '/start',
          },
        }),
      });
      expect(forged.status).toBe(401);
      // A wrong secret is refused before the body is read: 5 MB (over the 1 MB body limit, which would
      // answer 413 had it been parsed) gets the 401.
      expect(
        await postLargeBody(
          `${webhookSender.url}/updates/${hooked.botId}`,
          { 'x-telegram-bot-api-secret-token': 'wrong' },
          5 * 1024 * 1024,
        ),
      ).toBe(401);
    } finally {
      await webhookSender.stop();
      sender = await startSender();
    }
  });
});
