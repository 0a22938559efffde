import type { Messenger, MessengerDefinition } from '@mds/contracts';
import type { BotCredentials } from '@mds/registry-client';
import type { AttemptResult } from './attempt-result.js';
import type { BotFact } from './bot-facts.js';
import type { LinkButton } from './buttons.js';

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
 * One messenger's bot API, as the sender needs it. Implementations turn every answer into an AttemptResult
 * or BotFacts (the classification is theirs: they know the provider's texts) and never retry on their own.
 */
export interface MessengerProvider {
  readonly messenger: Messenger;
  /** The sender deployment's name (the catalogue's `sender`), used as the events' producer and in logs. */
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

export interface ProviderSettings {
  /** The messenger as the catalogue defines it: its code, its sender's name, its buttons per row. */
  definition: MessengerDefinition;
  /** The bot API's base URL, no trailing slash (the factory's defaultApiBase unless an operator set one). */
  apiBase: string;
  /** Long-poll wait of an update poll, seconds. */
  pollTimeoutS: number;
}

/** Who a bot token belongs to, as the messenger said it: outside text, cleaned by whoever stores it. */
export type TokenAnswer =
  | { ok: true; bot: { providerBotId: string; username: string } }
  | { ok: false; reason: 'rejected' | 'unreachable'; detail: string };

/** What a sender of this messenger starts with unless its settings say otherwise. */
export interface SenderDefaults {
  /** Port of the ops endpoints and of the updates webhook. */
  httpPort: number;
  /** Messages (MAX: requests) per second one bot may send. */
  botRatePerSecond: number;
  /** Messages per second to one chat (0: no limit). */
  chatRatePerSecond: number;
}

/** Everything the platform needs of one messenger's bot API: registered under the catalogue's name. */
export interface ProviderFactory {
  /** The real bot API's base URL (a sender's MESSENGER_API_BASE, a registry's token check, may replace it). */
  readonly defaultApiBase: string;
  readonly senderDefaults: SenderDefaults;
  /**
   * The setting that named the API base URL before the one sender service (MESSENGER_API_BASE now): a sender
   * started with it set refuses to start rather than quietly use the default.
   */
  readonly formerApiBaseSetting?: string;
  create(settings: ProviderSettings): MessengerProvider;
  /** Asks the messenger who `token` belongs to (Telegram getMe, MAX GET /me); never throws. */
  identifyBot(token: string, o: { apiBase: string; signal: AbortSignal }): Promise<TokenAnswer>;
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

/**
 * A token check over HTTP: `read` makes a TokenAnswer of the messenger's answer, or undefined when the answer
 * means neither a bot nor a refusal (it then counts as unreachable, with the status).
 */
export async function identifyOverHttp(
  label: string,
  request: Request,
  signal: AbortSignal,
  read: (response: Response, body: Record<string, unknown> | undefined) => TokenAnswer | undefined,
): Promise<TokenAnswer> {
  let response: Response;
  try {
    response = await fetch(request, { signal });
  } catch (error) {
    return {
      ok: false,
      reason: 'unreachable',
      detail: `${label} did not answer: ${(error as Error).message}`,
    };
  }
  const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  return (
    read(response, body && typeof body === 'object' ? body : undefined) ?? {
      ok: false,
      reason: 'unreachable',
      detail: `${label} answered ${response.status}`,
    }
  );
}
