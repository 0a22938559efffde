// A third messenger, "Pigeon", added through the plugin boundary alone: this module is what a real plugin
// would be (its catalogue entry and its bot API), named by MESSENGER_PLUGINS on every service. Its bot API is a
// local HTTP fake (pigeon-api.ts) at PIGEON_API_BASE. Node loads it as it is (type stripping): only erasable
// TypeScript here.
import { registerMessenger, type Messenger } from '@mds/contracts';
import { normalizeMessengerPhone } from '@mds/contracts/phone';
import {
  identifyOverHttp,
  inRows,
  noAnswer,
  PollError,
  registerProvider,
  scrubError,
  type AttemptResult,
  type BotCredentials,
  type BotFact,
  type MessengerProvider,
  type OutgoingMessage,
  type ProviderSettings,
} from '@mds/messengers';

export const PIGEON = {
  name: 'pigeon',
  code: 90 as Messenger,
  label: 'Pigeon',
  textLimit: 100,
  buttonsPerRow: 2,
  sender: 'pigeon-sender',
  deliveryTopic: 'mds.delivery.pigeon.v1',
};

/** One update of the fake's bot API. */
export interface PigeonUpdate {
  id: number;
  kind: 'started' | 'contact' | 'blocked';
  chat_id: string;
  user_id: string;
  phone?: string;
}

/** What an update says, in the platform's terms; a contact with no valid number says nothing. */
function factsOf(u: PigeonUpdate): BotFact[] {
  const ids = { chatId: u.chat_id, userId: u.user_id, updateId: String(u.id) };
  if (u.kind === 'contact') {
    const phone = normalizeMessengerPhone(u.phone ?? '');
    return phone ? [{ kind: 'contact-shared', ...ids, phone }] : [];
  }
  return [factOf(u, ids)];
}

function factOf(u: PigeonUpdate, ids: { chatId: string; userId: string; updateId: string }): BotFact {
  if (u.kind === 'blocked') return { kind: 'blocked', ...ids, reason: 'blocked' };
  return { kind: 'started', ...ids };
}

function createPigeonProvider(o: ProviderSettings): MessengerProvider {
  const url = (bot: BotCredentials, path: string) => `${o.apiBase}/bot${bot.token}/${path}`;
  return {
    messenger: o.definition.code,
    producer: o.definition.sender,
    pollsCountAgainstRate: false,
    webhookSecretHeader: 'x-pigeon-secret',

    async send(bot: BotCredentials, m: OutgoingMessage, signal: AbortSignal): Promise<AttemptResult> {
      let response: Response;
      try {
        response = await fetch(url(bot, 'messages'), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            chat_id: m.chatId,
            text: m.text,
            rows: inRows(m.buttons, o.definition.buttonsPerRow),
          }),
          signal,
        });
      } catch (error) {
        return noAnswer(scrubError(error, [bot.token]));
      }
      const body = (await response.json().catch(() => ({}))) as { message_id?: string; error?: string };
      if (response.ok) return { kind: 'sent', providerMessageId: String(body.message_id) };
      const description = String(body.error ?? response.status);
      if (response.status === 403)
        return { kind: 'rejected', code: 'BOT_BLOCKED_BY_USER', description, unreachable: 'blocked' };
      if (response.status === 401) return { kind: 'unauthorized', description };
      return { kind: 'transient', description };
    },

    async poll(bot: BotCredentials, cursor: string | undefined, signal: AbortSignal) {
      const response = await fetch(url(bot, `updates?after=${cursor ?? 0}`), { signal }).catch((error) => {
        throw new PollError('transient', scrubError(error, [bot.token]).message);
      });
      if (response.status === 401) throw new PollError('unauthorized', 'pigeon refused the token');
      if (!response.ok) throw new PollError('transient', `pigeon answered ${response.status}`);
      const { updates } = (await response.json()) as { updates: PigeonUpdate[] };
      const last = updates.at(-1);
      return { facts: updates.flatMap(factsOf), cursor: last ? String(last.id) : cursor };
    },

    subscribe(): Promise<void> {
      return Promise.reject(new Error('pigeon pushes no updates: poll them'));
    },
    factsOfPush: () => [],
  };
}

const text = (value: unknown) => (typeof value === 'string' ? value : '');

registerMessenger(PIGEON);
registerProvider(PIGEON.name, {
  defaultApiBase: process.env.PIGEON_API_BASE ?? 'http://127.0.0.1:9',
  senderDefaults: { httpPort: 8089, botRatePerSecond: 30, chatRatePerSecond: 0 },
  create: createPigeonProvider,
  identifyBot: (token, { apiBase, signal }) =>
    identifyOverHttp('pigeon', new Request(`${apiBase}/bot${token}/me`), signal, (response, body) => {
      if (response.ok && body)
        return { ok: true, bot: { providerBotId: text(body.id), username: text(body.username) } };
      if (response.status === 401)
        return {
          ok: false,
          reason: 'rejected',
          detail: typeof body?.error === 'string' ? body.error : 'refused',
        };
      return undefined;
    }),
});
