/**
 * Group commit: calls made while a flush is in flight are written together by the next one, so many
 * concurrent callers share one round trip to the database. `flush` gets the queued items in order and
 * returns one result per item.
 */
export function groupCommit<T, R>(
  flush: (items: T[]) => Promise<R[]>,
  maxItems = 500,
): (item: T) => Promise<R> {
  let queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  let busy = false;

  async function drain(): Promise<void> {
    busy = true;
    try {
      while (queue.length > 0) {
        const batch = queue.slice(0, maxItems);
        queue = queue.slice(batch.length);
        try {
          const results = await flush(batch.map((b) => b.item));
          batch.forEach((b, i) => b.resolve(results[i]!));
        } catch (error) {
          for (const b of batch) b.reject(error);
        }
      }
    } finally {
      busy = false;
    }
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!busy) void drain();
    });
}
