import type { Logger } from '@mds/logging';

type Stopper = { name: string; stop: () => Promise<void> | void };

/**
 * What a service started, to be stopped in reverse order of starting: a service that starts its database,
 * producer, HTTP server and consumers in that order stops consuming first, then closes HTTP, the producer,
 * and the database after everything that writes to it.
 */
export class Lifecycle {
  private readonly stoppers: Stopper[] = [];
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly timeoutMs: number,
  ) {}

  /** Registers how to stop something just started. */
  onStop(name: string, stop: () => Promise<void> | void): void {
    this.stoppers.push({ name, stop });
  }

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /** Stops everything once, in reverse order; each step gets what is left of the overall timeout. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const deadline = Date.now() + this.timeoutMs;
      for (const { name, stop } of [...this.stoppers].reverse()) {
        const left = Math.max(0, deadline - Date.now());
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), left);
        });
        try {
          const result = await Promise.race([Promise.resolve().then(stop), timedOut]);
          if (result === 'timeout') this.logger.warn({ component: name }, 'did not stop in time; going on');
          else this.logger.info({ component: name }, 'stopped');
        } catch (error) {
          this.logger.error({ err: error, component: name }, 'failed to stop cleanly');
        } finally {
          clearTimeout(timer);
        }
      }
    })();
    return this.stopping;
  }
}
