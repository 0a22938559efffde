/**
 * When this replica looks for due deliveries besides its idle poll: now (a resend asked for some, or new ones
 * were stored to wait for a slot), or when the earliest retry it stored is due. The claim loop listens; the
 * ones that learn of due work (results, arrivals, the admin API) only say when.
 */
export class WakeUps {
  private listener: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private dueAt = Number.POSITIVE_INFINITY;

  constructor(private readonly clock: () => Date) {}

  /** The one who looks (the claim loop). */
  listen(listener: () => void): void {
    this.listener = listener;
  }

  now(): void {
    this.listener?.();
  }

  /** Something is due at `at`: wake then, unless something earlier is already awaited. */
  at(at: Date): void {
    const ms = at.getTime();
    if (ms >= this.dueAt && this.timer) return;
    clearTimeout(this.timer);
    this.dueAt = ms;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.dueAt = Number.POSITIVE_INFINITY;
        this.now();
      },
      Math.max(0, ms - this.clock().getTime()),
    );
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.dueAt = Number.POSITIVE_INFINITY;
  }
}
