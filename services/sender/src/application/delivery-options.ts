import type { DeliveryEvent, TopicSpec } from '@mds/contracts';
import type { RetryPolicy } from '../domain/attempt.js';
import type { SenderParts } from './ports.js';

export interface DeliveryOptions extends SenderParts {
  deliveryTopic: TopicSpec<DeliveryEvent>;
  botRatePerSecond: number;
  chatRatePerSecond: number;
  botConcurrency: number;
  sendTimeoutMs: number;
  retry: RetryPolicy;
  /** Messages of one bot held in memory; the rest are parked in the journal until these are done. */
  windowPerBot: number;
  /** What a call that may have been delivered leads to (see nextStep): `fail` by default. */
  unconfirmed?: 'fail' | 'retry';
  /** How long a journal write after a provider call is retried while the database is away (60 s). */
  journalRetryMs?: number;
  /** How soon a claim that may be abandoned is looked at again (5 s). */
  orphanRecheckMs?: number;
  now?: () => number;
  random?: () => number;
  /**
   * How often scheduled messages (send_at) due soon are looked for in the journal (250 ms), and how long
   * before their time they are read into their lane (1 s), where they wait for it.
   */
  schedulePollMs?: number;
  scheduleLeadMs?: number;
  /**
   * Sets aside a delivery the journal refuses for its content (a value PostgreSQL cannot hold: no retry can
   * store it): the service's dead_letters. The lane then lets go of it and goes on.
   */
  setAside?: (refused: RefusedDelivery) => Promise<void>;
}

export interface RefusedDelivery {
  partition: number;
  /** Its offset on the delivery topic; undefined when it was read from the journal. */
  offset: string | undefined;
  botId: string;
  request: Buffer;
  error: unknown;
}

/** The longest a live claim lasts: two calls (a refused token is tried once more) and storing the result. */
export function claimLifeMs(o: { sendTimeoutMs: number; journalRetryMs?: number }): number {
  return 2 * o.sendTimeoutMs + (o.journalRetryMs ?? 60_000);
}
