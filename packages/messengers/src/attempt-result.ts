import type { MessageErrorCode } from '@mds/contracts';

/** Why a person cannot be reached through a bot, as PersonBlockedBot.reason carries it. */
export type Unreachable = 'blocked' | 'deactivated' | 'send-rejected';

/**
 * What one provider call for one message came to, classified by the provider. Its texts are what the
 * messenger said (`string`, as a provider returns it) or, once the sender has cleaned them, `CleanText`: only
 * that form is decided on and put into events.
 */
export type AttemptResult<Text extends string = string> =
  | { kind: 'sent'; providerMessageId: Text }
  /** The provider will never take this message: fail at once. `unreachable` also marks the link. */
  | { kind: 'rejected'; code: MessageErrorCode; description: Text; unreachable?: Unreachable }
  /** The provider refused the bot's token. */
  | { kind: 'unauthorized'; description: Text }
  /** Flood control. `retryAfterMs` when the provider said how long (Telegram); MAX says nothing. */
  | { kind: 'rate-limited'; retryAfterMs?: number; description: Text }
  /** 5xx, a refused connection, a name that does not resolve: nothing was delivered; may succeed later. */
  | { kind: 'transient'; description: Text }
  /**
   * The request went out and no answer came (a timeout, a connection reset after it was written): the
   * messenger may have delivered it. Repeating it may deliver it twice.
   */
  | { kind: 'unconfirmed'; description: Text };
