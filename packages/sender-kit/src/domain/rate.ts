/**
 * Evenly spaced slots: at most `perSecond` starts in any second, never a burst. Providers count calls
 * with token buckets of unknown size, so spacing is the one schedule that stays under every bucket of the
 * same rate while keeping the full rate (Telegram's 30/s per bot and 1/s per chat, MAX's 30/s per bot).
 * Pure: the caller passes the time.
 */
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

  /** Takes the slot at `nowMs`; call only when waitMs(nowMs) is 0. */
  take(nowMs: number): void {
    this.nextFreeMs = Math.max(this.nextFreeMs, nowMs) + this.intervalMs;
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
