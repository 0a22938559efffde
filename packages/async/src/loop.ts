export interface WakeableLoop {
  start(): void;
  /** Runs a pass now rather than at the end of the sleep; one asked for during a pass runs right after it. */
  wake(): void;
  /** Stops after the pass in progress; resolves once it is over. */
  stop(): Promise<void>;
}

/**
 * Runs `pass` again and again, sleeping `idleMs` between passes unless woken: by `wake()` (the write that
 * made work), or at once when a pass says more is waiting (it returns true). A pass that throws is logged
 * by `onError` and the loop sleeps before the next one. `rerunWhenWoken` may hold back the pass a wake asked
 * for during a pass (nothing could come of it now: the last pass failed, no capacity is free); the loop then
 * sleeps as if not woken.
 */
export function wakeableLoop(o: {
  pass: () => Promise<boolean>;
  idleMs: number;
  onError: (error: unknown) => void;
  rerunWhenWoken?: () => boolean;
}): WakeableLoop {
  let running = false;
  let woken = false;
  let wakeUp: (() => void) | undefined;
  let loop: Promise<void> | undefined;

  async function run(): Promise<void> {
    while (running) {
      woken = false;
      let more = false;
      try {
        more = await o.pass();
      } catch (error) {
        o.onError(error);
      }
      if (!running) return;
      if (more || (woken && (o.rerunWhenWoken?.() ?? true))) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, o.idleMs);
        wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wakeUp = undefined;
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      loop = run();
    },
    wake() {
      woken = true;
      wakeUp?.();
    },
    async stop() {
      running = false;
      wakeUp?.();
      await loop;
    },
  };
}
