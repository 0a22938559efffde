// How the consumer keeps going past a record its handler cannot handle, without ever skipping one it could.
import { backoffDelays } from '@mds/async';
import { failureKind, type FailureKind } from './failures.js';

export interface IsolationPolicy {
  /** Backoff between tries of the same events. */
  backoff: { initial: number; max: number };
  /** Tries of a chunk whose failure is neither transient nor the records' before it is split (3). */
  attempts: number;
  /**
   * Records set aside in a row, with no record handled between them, before the consumer stops setting
   * aside and waits instead (5): when every record fails alone, the fault is the handler's or its store's
   * (a missing table after a bad migration), and setting them aside would empty the log into dead letters.
   */
  maxSetAsideInARow: number;
}

/** What the isolation needs of the runner: the handler, waiting, and being told of failures. */
export interface IsolationPorts<E> {
  /** Before each try but the first: keeps the member in its group; throws when the group rebalances. */
  beforeTry(): Promise<void>;
  /** The handler on these events; throws its failure. */
  handle(events: E[]): Promise<void>;
  /** Waits, heartbeating; false once the events are no longer this member's to handle. */
  pause(ms: number): Promise<boolean>;
  /** `whole`: the chunk as it was handed over (not a part of it). */
  failed(events: E[], error: unknown, o: { kind: FailureKind; whole: boolean }): void;
  /** Every record of a chunk failed alone, and as many were set aside in a row already: it waits instead. */
  waitingOnSystemicFailure(events: E[], refused: Refused<E>[], inMs: number): void;
}

export interface Refused<E> {
  event: E;
  error: unknown;
}

/** The events are no longer this member's to handle (a rebalance, or the consumer stopping). */
export const LOST = Symbol('lost');

/**
 * Handles a chunk of events so that no single record can stop it. A failing chunk is tried again with backoff
 * while the failure is transient (never split, nothing set aside), a few times when its kind is unknown, then
 * split into contiguous halves handled left then right (each partition's order holds), down to the records
 * that fail alone: those are returned, to be set aside. Their neighbours passing shows the fault is theirs;
 * when no record of the chunk passed and `maxSetAsideInARow` records failed alone in a row, the fault is the
 * handler's or its store's, and the chunk waits (backoff up to its maximum) and is tried again instead.
 */
export class PoisonIsolation<E> {
  /** Records set aside since a record was last handled. */
  private inARow = 0;

  constructor(private readonly policy: IsolationPolicy) {}

  /** The records that failed alone (to be set aside), once every other one is handled; or LOST. */
  async handle(events: E[], ports: IsolationPorts<E>): Promise<Refused<E>[] | typeof LOST> {
    const stalled = backoffDelays(this.policy.backoff.initial, this.policy.backoff.max);
    for (;;) {
      const round = { passed: 0, refused: [] as Refused<E>[] };
      if (!(await this.explore(ports, events, { tries: this.policy.attempts, whole: true }, round)))
        return LOST;
      if (round.refused.length === 0) {
        this.inARow = 0;
        return [];
      }
      if (round.passed > 0 || this.inARow + round.refused.length <= this.policy.maxSetAsideInARow) {
        this.inARow = round.passed > 0 ? 0 : this.inARow + round.refused.length;
        return round.refused;
      }
      const delay = stalled();
      ports.waitingOnSystemicFailure(events, round.refused, delay);
      if (!(await ports.pause(delay))) return LOST;
    }
  }

  /** Tries the events; on failure narrows it down. False once they are no longer ours. */
  private async explore(
    ports: IsolationPorts<E>,
    events: E[],
    { tries, whole }: { tries: number; whole: boolean },
    round: { passed: number; refused: Refused<E>[] },
  ): Promise<boolean> {
    const delay = backoffDelays(this.policy.backoff.initial, this.policy.backoff.max);
    let failures = 0;
    for (let attempt = 0; ; attempt++) {
      if (!whole || attempt > 0) await ports.beforeTry();
      let error: unknown;
      try {
        await ports.handle(events);
        round.passed += events.length;
        return true;
      } catch (e) {
        error = e;
      }
      const kind = failureKind(error);
      ports.failed(events, error, { kind, whole });
      if (kind === 'transient') {
        if (!(await ports.pause(delay()))) return false;
        continue;
      }
      failures++;
      if (kind === 'unknown' && failures < tries) {
        if (!(await ports.pause(delay()))) return false;
        continue;
      }
      if (events.length === 1) {
        round.refused.push({ event: events[0]!, error });
        return true;
      }
      const middle = Math.ceil(events.length / 2);
      const part = { tries: 1, whole: false };
      return (
        (await this.explore(ports, events.slice(0, middle), part, round)) &&
        this.explore(ports, events.slice(middle), part, round)
      );
    }
  }
}
