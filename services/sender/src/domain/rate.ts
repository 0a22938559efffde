/**
 * Evenly spaced slots: at most `perSecond` starts in any second, never a burst. Providers count calls
 * with token buckets of unknown size, so spacing is the one schedule that stays under every bucket of the
 * same rate while keeping the full rate (Telegram's 30/s per bot and 1/s per chat, MAX's 30/s per bot).
 * Pure: the caller passes the time.
 */
/** How far behind its grid a schedule may catch up (a quarter second: 7 slots at 30/s). */
const CATCH_UP_MS = 250;

export class SlotSchedule {
  private nextFreeMs = 0;
  private readonly intervalMs: number;

  constructor(perSecond: number) {
    this.intervalMs = perSecond > 0 ? 1000 / perSecond : 0;
  }

  /** Milliseconds until a slot is free (0: now). */
  waitMs(nowMs: number): number {
    return Math.max(0, this.nextFreeMs - nowMs);
  }

  /**
   * Takes the slot at `nowMs`; call only when waitMs(nowMs) is 0. A start that comes late (a timer fires
   * after its time, the event loop was busy) keeps to the grid of slots, so lateness does not eat into
   * the rate; after a quiet spell longer than CATCH_UP_MS the grid starts again from now. Every start is
   * at or after its grid slot, so a provider's token bucket of the same rate is never emptied; catching
   * up sends at most CATCH_UP_MS worth of slots back to back.
   */
  take(nowMs: number): void {
    const onGrid = this.nextFreeMs >= nowMs - Math.max(this.intervalMs, CATCH_UP_MS);
    this.nextFreeMs = (onGrid ? this.nextFreeMs : nowMs) + this.intervalMs;
  }

  /** Nothing may start before `untilMs` (flood control told us to wait). */
  pauseUntil(untilMs: number): void {
    this.nextFreeMs = Math.max(this.nextFreeMs, untilMs);
  }

  /** True when no slot is reserved ahead: the schedule can be forgotten. */
  idle(nowMs: number): boolean {
    return this.nextFreeMs <= nowMs;
  }
}
