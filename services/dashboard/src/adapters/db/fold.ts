import type { Change, ProjectedEvent } from '../../domain/projection.js';

// What the read models' folds share: picking events of one kind, minutes, JSON rows, tallies.

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type Of<K extends Change['kind']> = ProjectedEvent & { change: Extract<Change, { kind: K }> };
export const ofKind = <K extends Change['kind']>(events: readonly ProjectedEvent[], kind: K) =>
  events.filter((e): e is Of<K> => e.change.kind === kind);

export const minuteOf = (at: Date) => new Date(Math.floor(at.getTime() / 60_000) * 60_000);
export const json = (rows: unknown[]) => JSON.stringify(rows);

/** Sums counts by key; rows come back sorted by key, so concurrent batches lock rows in one order. */
export function tally<T>(items: readonly T[], keyOf: (item: T) => string): [string, T, number][] {
  const counts = new Map<string, [T, number]>();
  for (const item of items) {
    const key = keyOf(item);
    const seen = counts.get(key);
    if (seen) seen[1]++;
    else counts.set(key, [item, 1]);
  }
  return [...counts.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, [item, n]]) => [k, item, n]);
}
