import type { PersonKeyPort } from '@mds/personal-data';
import type { Logger } from '@mds/logging';
import { fold } from '@mds/eventsourcing';
import type { RetryPolicy } from '../../domain/attempt.js';
import {
  decideDelivery,
  evolveDelivery,
  type DeliveryCommand,
  type DeliveryEvent,
  type RowFacts,
} from '../../domain/delivery.js';
import type { Item } from '../lanes.js';
import type { OutcomePublisher } from '../outcomes.js';
import type { BotDirectory, Journal, SenderMetrics, StoredDelivery } from '../ports.js';
import type { MessengerProvider } from '@mds/messengers';

/** What one message's turn needs from the delivery mechanism around it (ports and settings, no callbacks). */
export interface AttemptContext {
  provider: MessengerProvider;
  journal: Journal;
  directory: BotDirectory;
  personKeys: PersonKeyPort;
  outcomes: OutcomePublisher;
  metrics: SenderMetrics;
  logger: Logger;
  /** The journal's name for this replica's claims. */
  instanceId: string;
  sendTimeoutMs: number;
  retry: RetryPolicy;
  unconfirmed: 'fail' | 'retry';
  /** How long a journal write after a call is retried while the database is away. */
  journalRetryMs: number;
  /** How soon a message claimed by a process that may be gone is looked at again. */
  orphanRecheckMs: number;
  now: () => number;
  random: () => number;
  /** Aborted once the deliveries stop: journal writes are no longer retried. */
  stopped: AbortSignal;
}

export const releaseAcks = (item: Item) => {
  for (const ack of item.acks.splice(0)) ack();
};

/** A claim's longest life, from now: two calls (a refused token is tried once more), then storing the result. */
export const claimLife = (c: AttemptContext) => c.now() + 2 * c.sendTimeoutMs + c.journalRetryMs;

/** What the delivery rules read of a journal row. */
export const factsOf = (c: AttemptContext, row: StoredDelivery): RowFacts => ({
  status: row.status,
  seq: row.seq,
  attempts: row.attempts,
  failures: row.failures,
  notBeforeMs: row.notBefore?.getTime() ?? 0,
  claimedByUs: row.claimedBy === c.instanceId,
  claimAbandoned: row.claimAbandoned,
});

/**
 * Decides a fact of the message's turn, folds the events into its state, and does what they let go of:
 * a parked message's offsets, a known outcome published again (from `row`, the journal's). Returns the events.
 */
export function apply(
  c: AttemptContext,
  item: Item,
  command: DeliveryCommand,
  row?: StoredDelivery,
): DeliveryEvent[] {
  const events = decideDelivery(command, item.state);
  item.state = fold(evolveDelivery, item.state, events);
  for (const event of events) {
    if (event.type === 'Parked' || event.type === 'GivenBack') releaseAcks(item);
    else if (event.type === 'AlreadyDecided') c.outcomes.republish(row!, item.acks.splice(0));
  }
  return events;
}
