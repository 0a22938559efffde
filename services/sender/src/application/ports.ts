import type { OutgoingEvent } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import type { MessengerProvider } from '@mds/messengers';
import type { PersonKeyPort } from '@mds/personal-data';
import type { BotDirectory } from '@mds/registry-client';
import type { Counter, Gauge, Histogram } from 'prom-client';

export type { BotDirectory, BotSummary } from '@mds/registry-client';

/** A message read from the log, as the journal writes its row. */
export interface NewDelivery {
  /** The journal key: the message id, or a fallback channel's key (domain/channel.ts). */
  messageId: string;
  botId: string;
  partition: number;
  request: Buffer;
  deliverBefore: Date;
  /** Its send_at, when that is still ahead: parked as scheduled, and not sent before it. */
  sendAt?: Date | undefined;
}

/** scheduled: parked until its send_at (promoted to pending shortly before it). */
export type DeliveryStatus = 'scheduled' | 'pending' | 'sending' | 'sent' | 'failed';

export interface StoredDelivery {
  messageId: string;
  seq: bigint;
  botId: string;
  partition: number;
  request: Buffer;
  deliverBefore: Date;
  status: DeliveryStatus;
  attempts: number;
  failures: number;
  notBefore: Date | null;
  claimedBy: string | null;
  /** A claim older than the abandon window: whoever made it has surely stopped. */
  claimAbandoned: boolean;
  outcome: Buffer | null;
  sideEffect: Buffer | null;
  spilled: boolean;
  published: boolean;
}

export interface Outcome {
  messageId: string;
  status: 'sent' | 'failed';
  outcome: Buffer;
  sideEffect?: Buffer;
}

/** A claimed message given back for a later attempt. */
export interface GiveBack {
  messageId: string;
  notBefore: Date;
  failed: boolean;
}

/**
 * The sender's journal (its database): one row per message it claimed, parked or decided, and the bots'
 * update cursors. Claims are compare-and-set on this replica's name, so two owners never both call.
 */
export interface Journal {
  /** This replica's name on its claims. */
  readonly instanceId: string;
  /**
   * Claims a message read from the log for one call, by writing its row: 1 (its first attempt), the row
   * it has already (another claim, a parked or a decided message), or undefined (another replica's, now).
   */
  claimNew(delivery: NewDelivery): Promise<number | StoredDelivery | undefined>;
  /** Claims a parked message for one call: the attempt number, or undefined if it is not pending. */
  claimParked(messageId: string): Promise<number | undefined>;
  /**
   * Stores the outcome of a claimed message; false if the claim was lost (another owner took over).
   * Idempotent: storing the same outcome again answers true (a retry after a lost answer).
   */
  settle(outcome: Outcome): Promise<boolean>;
  /** Gives a claimed message back for a later attempt: it is parked from then on. */
  release(item: GiveBack): Promise<boolean>;
  markPublished(messageId: string): Promise<void>;
  /**
   * Parks messages read from the log that must wait (a bot's backlog beyond its window, or a send_at still
   * ahead: scheduled). Returns the rows that were there already, for the caller to see what came of those
   * messages.
   */
  park(deliveries: NewDelivery[]): Promise<StoredDelivery[]>;
  /**
   * Scheduled messages of these partitions due by `until`, made pending (parked) with a new seq, so that a
   * lane's refill reads them after what it read already: their bots and partitions.
   */
  promoteDue(
    partitions: readonly number[],
    until: Date,
  ): Promise<{ messageId: string; botId: string; partition: number }[]>;
  /** Promoted messages made scheduled again (still pending): their partition went elsewhere meanwhile. */
  unpromote(messageIds: readonly string[]): Promise<void>;
  /**
   * Cancels messages no call was claimed for yet (no row; parked or scheduled, never attempted) by storing
   * the outcome: the first outcome of each message wins. Returns those canceled.
   */
  cancel(
    items: { messageId: string; partition: number; request: Buffer; outcome: Buffer }[],
  ): Promise<string[]>;
  /** Fails messages no call can be made for, by writing their rows; returns the rows there already. */
  decideAtOnce(items: (NewDelivery & { outcome: Buffer })[]): Promise<StoredDelivery[]>;
  /** The rows of these messages (those that have one). */
  rowsOf(messageIds: readonly string[]): Promise<StoredDelivery[]>;
  /** Open (pending or sending) deliveries of one bot after `afterSeq`, in order. */
  openOfBot(botId: string, afterSeq: bigint, limit: number): Promise<StoredDelivery[]>;
  /** Bots with open deliveries in these partitions. */
  botsWithOpenWork(partitions: readonly number[]): Promise<string[]>;
  /** Decided outcomes of parked deliveries not yet known to be in Kafka (a crash before publishing). */
  unpublished(partitions: readonly number[]): Promise<StoredDelivery[]>;
  /**
   * A claim that never got its outcome, older than the abandon window by the database's clock: the process
   * that made it has surely stopped (its calls and its retries have long ended). Its outcome is stored here
   * instead; false if it was decided (or given back) meanwhile, or is not that old yet.
   */
  settleAbandoned(outcome: Outcome): Promise<boolean>;
  /** A bot's update cursor (Telegram offset, MAX marker), saved once its facts are in Kafka. */
  cursor(botId: string): Promise<string | undefined>;
  saveCursor(botId: string, cursor: string): Promise<void>;
}

/** The event log (Kafka): resolves once it holds the events. */
export interface EventLog {
  publish(events: readonly OutgoingEvent[], options?: { timeoutMs?: number }): Promise<void>;
}

/** What the sender counts (Prometheus). */
export interface SenderMetrics {
  queued: Gauge;
  attempts: Counter<'result'>;
  outcomes: Counter<'outcome'>;
  floods: Counter;
  providerSeconds: Histogram<'result'>;
  updates: Counter<'kind'>;
  pollFailures: Counter<'kind'>;
  polledBots: Gauge;
}

/** What a sender's deliveries and its update ingestion both work with (one of each per process). */
export interface SenderParts {
  provider: MessengerProvider;
  journal: Journal;
  directory: BotDirectory;
  /** Opens the sealed text and buttons of each delivery; seals the number of a shared contact. */
  personKeys: PersonKeyPort;
  publisher: EventLog;
  logger: Logger;
  metrics: SenderMetrics;
}
