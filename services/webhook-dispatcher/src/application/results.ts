import { retryUntil } from '@mds/async';
import type { EventPublisher } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import type { Completion, DeliveryStore } from './ports.js';

export interface ResultWriterOptions {
  store: Pick<DeliveryStore, 'complete'>;
  publisher: Pick<EventPublisher, 'publish'>;
  logger: Logger;
  /** Results arriving within this long are stored together: they describe attempts already made. */
  gatherMs: number;
  /** Results stored by one statement at most. */
  maxBatch?: number;
  /** After each batch is stored, with the results whose lease was still this worker's. */
  onStored(stored: Completion[]): Promise<void>;
  onBatch?(size: number): void;
  onQuarantined?(completion: Completion, error: unknown): void;
}

/**
 * SQLSTATE classes of errors that come again whatever the retry: bad data (22), integrity (23), syntax or
 * a missing object (42), limits (54). Anything else (a lost connection, a restart, a deadlock) may pass.
 */
function failsEveryTime(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && ['22', '23', '42', '54'].includes(code.slice(0, 2));
}

/** A result the database refuses whatever we do: kept without its attempt's details, as failed. */
function quarantined(c: Completion, reason: string): Completion {
  return {
    ...c,
    update: { ...c.update, lastError: `the result could not be stored (${reason})` },
    ...(c.attempt
      ? { attempt: { ...c.attempt, responseExcerpt: '', error: c.attempt.error && reason } }
      : {}),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Stores attempt results in batches, after publishing their events (the attempts happened, whatever is
 * stored). A batch that fails for good is split until the result that fails is found and quarantined:
 * stored without what it cannot hold, so one company's strange answer never holds up anyone else's.
 */
export class ResultWriter {
  private queue: { completion: Completion; stored: () => void }[] = [];
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ok = true;
  private stopping = false;
  private readonly maxBatch: number;

  constructor(private readonly o: ResultWriterOptions) {
    this.maxBatch = o.maxBatch ?? 500;
  }

  /** Resolves once the result is stored (or, if it cannot be stored at all, quarantined). */
  add(completion: Completion): Promise<void> {
    return new Promise<void>((resolve) => {
      this.queue.push({ completion, stored: resolve });
      this.schedule(this.stopping || this.queue.length >= this.maxBatch ? 0 : this.o.gatherMs);
    });
  }

  /** Results waiting to be stored. */
  pending(): number {
    return this.queue.length;
  }

  /** False while results cannot be stored (the database or Kafka is away). */
  healthy(): boolean {
    return this.ok;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.schedule(0);
    }
    while (this.flushing || this.timer) {
      await this.flushing;
      await sleep(0);
    }
  }

  private schedule(delayMs: number): void {
    if (this.flushing || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushing = this.flush()
        .catch((error: unknown) => this.o.logger.error({ err: error }, 'storing attempt results failed'))
        .finally(() => {
          this.flushing = undefined;
          if (this.queue.length > 0) this.schedule(this.stopping ? 0 : this.o.gatherMs);
        });
    }, delayMs);
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, this.maxBatch);
      this.queue = this.queue.slice(batch.length);
      const completions = batch.map((b) => b.completion);
      const events = completions.flatMap((c) => c.events);
      if (events.length > 0)
        await this.untilDone('publish webhook events', events.length, () => this.o.publisher.publish(events));
      const stored = await this.store(completions);
      this.o.onBatch?.(batch.length);
      await this.o.onStored(stored);
      for (const b of batch) b.stored();
    }
  }

  /** Stores a batch; one that fails for good is halved until the result at fault is found and quarantined. */
  private async store(batch: Completion[]): Promise<Completion[]> {
    let ids: Set<string> | undefined;
    try {
      await this.untilDone('store attempt results', batch.length, async () => {
        ids = await this.o.store.complete(batch);
      });
    } catch (error) {
      if (batch.length > 1) {
        const half = Math.ceil(batch.length / 2);
        return [...(await this.store(batch.slice(0, half))), ...(await this.store(batch.slice(half)))];
      }
      ids = await this.quarantine(batch[0]!, error);
    }
    return batch.filter((c) => ids!.has(c.claim.webhookId));
  }

  private async quarantine(c: Completion, error: unknown): Promise<Set<string>> {
    this.o.onQuarantined?.(c, error);
    this.o.logger.error({ err: error, webhookId: c.claim.webhookId }, 'an attempt result was quarantined');
    const code = (error as { code?: string }).code ?? 'error';
    let ids = new Set<string>();
    await this.untilDone('store a quarantined result', 1, async () => {
      ids = await this.o.store.complete([quarantined(c, `database refused it: ${code}`)]);
    });
    return ids;
  }

  private async untilDone(what: string, size: number, work: () => Promise<void>): Promise<void> {
    await retryUntil(work, {
      initialMs: 100,
      maxMs: 5_000,
      shouldRetry: (error) => !failsEveryTime(error),
      onRetry: (error) => {
        this.ok = false;
        this.o.logger.error({ err: error, results: size }, `could not ${what}; retrying`);
      },
    });
    this.ok = true;
  }
}
