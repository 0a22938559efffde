import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allTopics, messengerNamed } from '@mds/contracts';
import { eventually } from '@mds/local-infra/testing';
import type { Stack } from './harness.js';
import { startDeliveryStack, uniquePhone, type Sandbox, type SimulatedBot } from './sandbox.js';
import { PigeonApi } from './third-messenger/pigeon-api.js';
// The plugin registers the third messenger in this process's catalogue too: the stack then starts its sender.
import { PIGEON } from './third-messenger/pigeon-plugin.js';

// The plugin boundary, proved: a third messenger known only through its plugin (its catalogue entry and its bot
// API against a local HTTP fake), named by MESSENGER_PLUGINS on every service, goes through the whole stack:
// its bot registered with a checked token, a person linked from its updates, a message accepted under its own
// text limit, routed to its own topic, sent by its own sender, and the signed webhook of the outcome.

const WAIT_MS = 60_000;
const pigeon = new PigeonApi();
let stack: Stack;
let sandbox: Sandbox;

beforeAll(async () => {
  const apiBase = await pigeon.start();
  ({ stack, sandbox } = await startDeliveryStack({
    without: ['dashboard'],
    common: {
      MESSENGER_PLUGINS: fileURLToPath(new URL('./third-messenger/pigeon-plugin.ts', import.meta.url)),
      PIGEON_API_BASE: apiBase,
    },
  }));
}, 180_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
  await pigeon.stop();
});

describe('a third messenger added by a plugin alone', () => {
  it('is in the catalogue with its own delivery topic and sender', () => {
    expect(messengerNamed('pigeon')).toEqual(PIGEON);
    expect(allTopics().map((t) => t.name)).toContain('mds.delivery.pigeon.v1');
    expect(stack.replicas('pigeon-sender')).toHaveLength(1);
  });

  it('sends a message to a person linked through its bot, and the company gets the signed webhook of the outcome', async () => {
    const company = await sandbox.companyWithWebhooks('pigeon-co');
    const token = `pigeon-${randomBytes(8).toString('hex')}`;
    pigeon.bot(token, 'coop_bot');
    const { bot_id: botId } = await sandbox.admin<{ bot_id: string }>(
      'POST',
      `/companies/${company.companyId}/bots`,
      {
        messenger: 'pigeon',
        name: 'coop',
        token,
        default: true,
      },
    );
    const bot = { botId, name: 'coop' } as SimulatedBot;
    const phone = uniquePhone();
    pigeon.startAndShare(token, 'chat-1', `+${phone}`);
    await sandbox.waitForLink(company.companyId, phone, bot, true);

    // The door applies the catalogue's text limit of the messenger (100 for Pigeon, 4096 for Telegram).
    const tooLong = await sandbox.call(company.apiKey, '/send', {
      phone_number: phone,
      service: 'pigeon',
      text: 'x'.repeat(PIGEON.textLimit + 1),
    });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body).toMatchObject({
      code: 'validation_failed',
      errors: [expect.objectContaining({ pointer: '#/text', code: 'text_too_long' })],
    });

    const accepted = await sandbox.call<{ event_id: string }>(company.apiKey, '/send', {
      phone_number: phone,
      service: 'pigeon',
      text: 'Your parcel is at the loft',
      buttons: [
        { text: 'Track', url: 'https://example.com/track' },
        { text: 'Help', url: 'https://example.com/help' },
        { text: 'Stop', url: 'https://example.com/stop' },
      ],
    });
    expect(accepted.status).toBe(202);
    const eventId = accepted.body.event_id;

    const webhook = await company.webhooks.waitFor(eventId, WAIT_MS);
    expect(webhook.verified).toBe(true);
    expect(webhook.payload).toMatchObject({ type: 'message.status', event_id: eventId, state: 'sent' });
    // Sent once, by the plugin's provider, with its buttons in rows of the catalogue's two.
    expect(pigeon.sent).toEqual([
      {
        botToken: token,
        chatId: 'chat-1',
        text: 'Your parcel is at the loft',
        rows: [
          [
            { text: 'Track', url: 'https://example.com/track' },
            { text: 'Help', url: 'https://example.com/help' },
          ],
          [{ text: 'Stop', url: 'https://example.com/stop' }],
        ],
      },
    ]);
    const state = await sandbox.finishedState(company.apiKey, eventId, WAIT_MS);
    expect(state).toMatchObject({ event_id: eventId, state: 'sent' });
  });

  it('fails a message to a person who blocked the bot with the spec error, through the same path', async () => {
    const company = await sandbox.companyWithWebhooks('pigeon-blocked');
    const token = `pigeon-${randomBytes(8).toString('hex')}`;
    pigeon.bot(token, 'loft_bot');
    const { bot_id: botId } = await sandbox.admin<{ bot_id: string }>(
      'POST',
      `/companies/${company.companyId}/bots`,
      {
        messenger: 'pigeon',
        name: 'loft',
        token,
        default: true,
      },
    );
    const phone = uniquePhone();
    pigeon.startAndShare(token, 'chat-2', `+${phone}`);
    await sandbox.waitForLink(company.companyId, phone, { botId, name: 'loft' } as SimulatedBot, true);
    pigeon.block('chat-2');
    const eventId = (
      await sandbox.call<{ event_id: string }>(company.apiKey, '/send', {
        phone_number: phone,
        service: 'pigeon',
        text: 'Still there?',
      })
    ).body.event_id;
    const webhook = await company.webhooks.waitFor(eventId, WAIT_MS);
    expect(webhook.payload).toMatchObject({ state: 'failed', error_code: 'BOT_BLOCKED_BY_USER' });
    await eventually(
      'the link marked unreachable',
      async () =>
        (await sandbox.client(company.companyId, phone)).links.find(
          (l) => l.bot_id === botId && !l.reachable,
        ),
      WAIT_MS,
    );
  });
});
