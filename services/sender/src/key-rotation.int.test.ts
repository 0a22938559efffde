import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Messenger, topics, type Complete, type MessageEvent } from '@mds/contracts';
import { eventually } from '@mds/local-infra/testing';
import {
  messageAccepted,
  outcomesOf,
  publishAccepted,
  runSender,
  startSenderStack,
  type SenderStack,
  type SimBot,
} from './test-support/stack.js';

const k1 = `k1:${randomBytes(32).toString('base64')}`;
const k2 = `k2:${randomBytes(32).toString('base64')}`;

let stack: SenderStack;
let messages: { events: Complete<MessageEvent>[]; stop: () => Promise<void> };
let bot: SimBot;

const startSender = () => runSender('telegram', { ...stack.senderEnv, SEND_TIMEOUT_MS: '3000' });

beforeAll(async () => {
  stack = await startSenderStack({ encryptionKeys: k1 });
  messages = await stack.collect(topics.message);
  bot = await stack.createBot('telegram', 'rotated');
});

afterAll(async () => {
  await messages?.stop();
  await stack?.stop();
});

/** Sends through the whole path (registry routing, the bot token from the registry, the simulator). */
async function sendsTo(phone: string): Promise<void> {
  const sender = await startSender();
  try {
    const messageId = await publishAccepted(
      stack,
      messageAccepted(stack.companyId, phone, Messenger.MESSENGER_TELEGRAM, { text: 'still here' }),
    );
    const outcome = await eventually(
      `outcome of ${messageId}`,
      () => outcomesOf(messages.events, [messageId])[0],
      30_000,
    );
    expect(outcome.event.$case).toBe('messageSent');
  } finally {
    await sender.stop();
  }
}

describe('retiring an encryption key', () => {
  it('seals with k1, rotates to k2, reseals, drops k1, and still sends', async () => {
    const webhook = `/companies/${stack.companyId}/webhook`;
    expect((await stack.admin('PUT', webhook, { url: 'https://acme.example/hooks' })).status).toBe(200);
    const secrets = (await stack.admin<{ secrets: { secret: string }[] }>('GET', `${webhook}/secrets`)).body
      .secrets;
    expect(secrets).toHaveLength(1);

    // A person who started the bot and shared their number, so sends route to them.
    const person = await stack.createPerson();
    const sender = await startSender();
    try {
      for (const action of ['start', 'share_contact'])
        await stack.control('POST', `/people/${person.id}/actions`, { action, bot_id: bot.simId });
      await eventually('the registry links the person', async () => {
        const r = await stack.admin<{ exists: boolean }>(
          'GET',
          `/companies/${stack.companyId}/clients/${person.phone}`,
        );
        return r.body.exists ? r : undefined;
      });
    } finally {
      await sender.stop();
    }
    await sendsTo(person.phone);

    // Dropping k1 before resealing leaves the stored secrets unreadable.
    await stack.restartRegistry(k2);
    expect((await stack.admin('GET', `${webhook}/secrets`)).status).toBe(500);

    // Rotate: k2 seals, k1 still opens; reseal renews everything once.
    await stack.restartRegistry(`${k2},${k1}`);
    const resealed = await stack.admin<Record<string, unknown>>('POST', '/keys/reseal');
    expect(resealed.status).toBe(200);
    expect(resealed.body).toMatchObject({ key_id: 'k2', bot_tokens: 1, webhook_secrets: 1, failed: [] });
    expect((await stack.admin('POST', '/keys/reseal')).body).toMatchObject({
      bot_tokens: 0,
      webhook_secrets: 0,
    });

    // k1 dropped: the same secrets, and a real send with the token the registry opens under k2.
    await stack.restartRegistry(k2);
    const after = await stack.admin<{ secrets: { secret: string }[] }>('GET', `${webhook}/secrets`);
    expect(after.status).toBe(200);
    expect(after.body.secrets.map((s) => s.secret)).toEqual(secrets.map((s) => s.secret));
    await sendsTo(person.phone);
  }, 180_000);
});
