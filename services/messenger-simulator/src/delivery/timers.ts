/**
 * Every timer the simulator runs for a request (injected latency, held "timeouts", long polls, webhook
 * retry delays). `stop` fires them all at once, so shutdown never waits for a long poll or a held call.
 */
export class Timers {
  private readonly pending = new Set<() => void>();
  private stoppedFlag = false;

  get stopped(): boolean {
    return this.stoppedFlag;
  }

  /** Runs `fn` after `ms`, or at stop, whichever is first. Returns a cancel function. */
  after(ms: number, fn: () => void): () => void {
    if (this.stoppedFlag) {
      // Never synchronously: callers may not have kept the cancel function yet.
      queueMicrotask(fn);
      return () => {};
    }
    const fire = () => {
      clearTimeout(timer);
      if (this.pending.delete(fire)) fn();
    };
    const timer = setTimeout(fire, Math.max(0, ms));
    this.pending.add(fire);
    return () => {
      clearTimeout(timer);
      this.pending.delete(fire);
    };
  }

  /** Resolves after `ms`, at stop, or when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const onAbort = () => {
        cancel();
        resolve();
      };
      const cancel = this.after(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  stop(): void {
    this.stoppedFlag = true;
    for (const fire of [...this.pending]) fire();
  }
}
