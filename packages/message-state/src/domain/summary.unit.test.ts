import { describe, expect, it } from 'vitest';
import { streamOf } from '../../test/events.js';
import { foldInto, type StateRecord } from './state.js';
import { countSummaryStates, foldSummaryStates, latencyFigures, summarize, type Summary } from './summary.js';

/** A seeded generator, so a failure can be replayed (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The events of many messages and requests as a log may hold them: some only accepted, some only an
 * outcome (a replay that started late), outcomes before their acceptance, two outcomes, and events
 * delivered twice (at-least-once), interleaved across streams.
 */
function messyLog(seed: number, streams: number): StateRecord[] {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const perStream: StateRecord[][] = [];
  for (let i = 0; i < streams; i++) {
    const s = streamOf(undefined, pick(['c1', 'c2']));
    const t = () => Math.floor(next() * 50);
    const candidates: StateRecord[] =
      next() < 0.7
        ? [
            s.accepted(t(), { botName: pick(['', 'shop']) }),
            s.sent(t(), t()),
            s.failed(t(), pick(['CLIENT_NOT_FOUND', 'PROVIDER_ERROR'])),
          ]
        : next() < 0.5
          ? [s.phoneChangeRequested(t()), s.phoneChanged(t()), s.phoneChangeRejected(t())]
          : [s.checkRequested(t()), s.checked(t())];
    const events = candidates.filter(() => next() < 0.7);
    if (next() < 0.3 && events.length > 0) events.push(pick(events)); // delivered twice
    if (next() < 0.2) events.reverse();
    perStream.push(events);
  }
  const log: StateRecord[] = [];
  while (perStream.some((e) => e.length > 0)) {
    const live = perStream.filter((e) => e.length > 0);
    log.push(pick(live).shift()!);
  }
  return log;
}

const leanSummary = (records: StateRecord[]): Summary => {
  const { summary, latencies } = countSummaryStates(foldSummaryStates(new Map(), records).values());
  summary.messages.acceptedToSentMs = latencyFigures(latencies);
  return summary;
};

describe('summary fold', () => {
  it('gives the summary of the full states for any log, duplicates and reorders included', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const log = messyLog(seed, 25);
      expect(leanSummary(log), `seed ${seed}`).toEqual(summarize(foldInto(new Map(), log).values()));
    }
  });

  it('keeps the same lifecycle as the full state, times in epoch milliseconds', () => {
    const m = streamOf();
    const log = [m.accepted(0, { botName: 'shop' }), m.sent(5, 3), m.failed(6)];
    const full = foldInto(new Map(), log).get(m.id)!;
    const lean = foldSummaryStates(new Map(), log).get(m.id)!;
    const { eventId: _e, companyId: _c, history: _h, ...lifecycle } = full;
    expect(lean).toEqual({
      ...lifecycle,
      acceptedAt: Date.parse(full.acceptedAt!),
      finishedAt: Date.parse(full.finishedAt!),
      updatedAt: Date.parse(full.updatedAt),
    });
  });
});
