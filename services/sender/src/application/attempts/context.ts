import type { PersonKeyPort } from '@mds/personal-data';
import type { Logger } from '@mds/logging';
import type { RetryPolicy } from '../../domain/attempt.js';
import type { Item, Lane } from '../lanes.js';
import type { OutcomePublisher } from '../outcomes.js';
import type { BotDirectory, Journal, SenderMetrics } from '../ports.js';
import type { MessengerProvider } from '../provider.js';

/** What one message's turn needs from the delivery mechanism around it. */
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
  stopping: () => boolean;
  /** Takes the message out of its lane (decided, given to the journal, or another's now). */
  forget(lane: Lane, item: Item): void;
  /** Its claim was lost to another replica: the lane reads its open work again once that claim surely ended. */
  claimLost(lane: Lane, item: Item): void;
}

export const releaseAcks = (item: Item) => {
  for (const ack of item.acks.splice(0)) ack();
};

/** A claim's longest life, from now: two calls (a refused token is tried once more), then storing the result. */
export const claimLife = (c: AttemptContext) => c.now() + 2 * c.sendTimeoutMs + c.journalRetryMs;
