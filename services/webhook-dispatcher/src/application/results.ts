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

export interface ResultWriter {
  /** Resolves once the result is stored (or, if it cannot be stored at all, quarantined). */
  add(completion: Completion): Promise<void>;
  /** Results waiting to be stored. */
  pending(): number;
  /** False while results cannot be stored (the database or Kafka is away). */
  healthy(): boolean;
  stop(): Promise<void>;
}

/**
 * SQLSTATE classes of errors that come again whatever the retry: bad data (22), integrity (23), syntax or
 * a missing object (42), limits (54). Anything else (a lost connection, a restart, a deadlock) may pass.
 */
function failsEveryTime(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && ['22', '23', '42', '54'].includes(code.slice(0, 2));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Stores attempt results in batches, after publishing their events (the attempts happened, whatever is
 * stored). A batch that fails for good is split until the result that fails is found and quarantined:
 * stored without what it cannot hold, so one company's strange answer never holds up anyone else's.
 */
export function createResultWriter(o: ResultWriterOptions): ResultWriter {
  const maxBatch = o.maxBatch ?? 500;
  let queue: { completion: Completion; stored: () => void }[] = [];
  let flushing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let ok = true;
  let stopping = false;

  async function untilDone(what: string, size: number, work: () => Promise<void>): Promise<void> {
    await retryUntil(work, {
      initialMs: 100,
      maxMs: 5_000,
      shouldRetry: (error) => !failsEveryTime(error),
      onRetry: (error) => {
        ok = false;
        o.logger.error({ err: error, results: size }, `could not ${what}; retrying`);
      },
    });
    ok = true;
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

  async function store(batch: Completion[]): Promise<Completion[]> {
    let ids: Set<string> | undefined;
    try {
      await untilDone('store attempt results', batch.length, async () => {
        ids = await o.store.complete(batch);
      });
    } catch (error) {
      if (batch.length > 1) {
        const half = Math.ceil(batch.length / 2);
        return [...(await store(batch.slice(0, half))), ...(await store(batch.slice(half)))];
      }
      const c = batch[0]!;
      o.onQuarantined?.(c, error);
      o.logger.error({ err: error, webhookId: c.claim.webhookId }, 'an attempt result was quarantined');
      const code = (error as { code?: string }).code ?? 'error';
      await untilDone('store a quarantined result', 1, async () => {
        ids = await o.store.complete([quarantined(c, `database refused it: ${code}`)]);
      });
    }
    return batch.filter((c) => ids!.has(c.claim.webhookId));
  }

  async function flush(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      const completions = batch.map((b) => b.completion);
      const events = completions.flatMap((c) => c.events);
      if (events.length > 0)
        await untilDone('publish webhook events', events.length, () => o.publisher.publish(events));
      const stored = await store(completions);
      o.onBatch?.(batch.length);
      await o.onStored(stored);
      for (const b of batch) b.stored();
    }
  }

  function schedule(delayMs: number): void {
    if (flushing || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      flushing = flush()
        .catch((error: unknown) => o.logger.error({ err: error }, 'storing attempt results failed'))
        .finally(() => {
          flushing = undefined;
          if (queue.length > 0) schedule(stopping ? 0 : o.gatherMs);
        });
    }, delayMs);
  }

  return {
    add(completion) {
      return new Promise<void>((resolve) => {
        queue.push({ completion, stored: resolve });
        schedule(stopping || queue.length >= maxBatch ? 0 : o.gatherMs);
      });
    },
    pending: () => queue.length,
    healthy: () => ok,
    async stop() {
      stopping = true;
      if (timer) {
        clearTimeout(timer);
        timer = undefined;
        schedule(0);
      }
      while (flushing || timer) {
        await flushing;
        await sleep(0);
      }
    },
  };
}
