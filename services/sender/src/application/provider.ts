import type { Messenger } from '@mds/contracts';
import type { BotCredentials } from '@mds/registry-client';
import type { AttemptResult } from '../domain/attempt.js';
import type { BotFact } from '../domain/bot-facts.js';
import type { LinkButton } from '../domain/buttons.js';

/** What a sender calls a messenger with, as client-registry hands it out. */
export type { BotCredentials } from '@mds/registry-client';

export interface OutgoingMessage {
  chatId: string;
  userId: string;
  text: string;
  buttons: readonly LinkButton[];
}

export interface UpdatesPage {
  facts: BotFact[];
  /** Where the next poll starts (Telegram offset, MAX marker); the caller stores it after publishing. */
  cursor: string | undefined;
}

/** Why a poll failed, so the poller knows how long to wait. */
export type PollFailure = 'conflict' | 'unauthorized' | 'rate-limited' | 'transient';

export class PollError extends Error {
  override readonly name = 'PollError';
  constructor(
    readonly kind: PollFailure,
    message: string,
  ) {
    super(message);
  }
}

/**
 * One messenger's bot API, as the shared sender mechanism needs it. Implementations turn every answer
 * into an AttemptResult or BotFacts (the classification is theirs: they know the provider's texts) and
 * never retry on their own.
 */
export interface MessengerProvider {
  readonly messenger: Messenger;
  /** The service name, used as the events' producer and in logs. */
  readonly producer: string;
  /** True when update polls count against the bot's request rate (MAX counts every request). */
  readonly pollsCountAgainstRate: boolean;
  send(bot: BotCredentials, message: OutgoingMessage, signal: AbortSignal): Promise<AttemptResult>;
  /** Long-polls for updates after `cursor`; throws PollError. */
  poll(bot: BotCredentials, cursor: string | undefined, signal: AbortSignal): Promise<UpdatesPage>;
  /** Webhook mode: asks the messenger to push this bot's updates to `url` with `secret`. */
  subscribe(bot: BotCredentials, url: string, secret: string, signal: AbortSignal): Promise<void>;
  /** Webhook mode: the header carrying the secret (lower case). */
  readonly webhookSecretHeader: string;
  /** Webhook mode: the facts in one pushed body (one update). */
  factsOfPush(bot: BotCredentials, body: unknown): BotFact[];
  close?(): void;
}

/** One client per bot token, made on first use (a replaced token gets a new client). */
export function clientPerToken<T>(create: (token: string) => T): (bot: BotCredentials) => T {
  const clients = new Map<string, T>();
  return (bot) => {
    let client = clients.get(bot.token);
    if (!client) {
      client = create(bot.token);
      clients.set(bot.token, client);
    }
    return client;
  };
}
