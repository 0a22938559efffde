import type { Timers } from './timers.js';

/** Wakes the long polls of a bot when an update arrives for it. */
export class UpdateSignal {
  private readonly waiters = new Map<number, Set<() => void>>();

  constructor(private readonly timers: Timers) {}

  notify(botId: number): void {
    const waiting = this.waiters.get(botId);
    if (!waiting) return;
    this.waiters.delete(botId);
    for (const wake of waiting) wake();
  }

  /** Resolves on the next update for the bot, after `ms`, at stop, or when `signal` aborts. */
  wait(botId: number, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted || ms <= 0) return resolve();
      let set = this.waiters.get(botId);
      if (!set) this.waiters.set(botId, (set = new Set()));
      const waiting = set;
      const done = () => {
        waiting.delete(done);
        if (waiting.size === 0 && this.waiters.get(botId) === waiting) this.waiters.delete(botId);
        cancel();
        signal.removeEventListener('abort', done);
        resolve();
      };
      const cancel = this.timers.after(ms, done);
      waiting.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
