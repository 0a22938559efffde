import { describe, expect, it } from 'vitest';
import { SlotSchedule } from './rate.js';

/** Starts the schedule allows in [0, horizonMs) if every call starts as soon as it may. */
function starts(s: SlotSchedule, horizonMs: number): number[] {
  const out: number[] = [];
  for (let t = 0; t < horizonMs;) {
    const wait = s.waitMs(t);
    if (wait > 0) {
      t += wait;
      continue;
    }
    s.take(t);
    out.push(t);
  }
  return out;
}

describe('SlotSchedule', () => {
  it('spaces 30 a second evenly: never more than 30 in any one-second window', () => {
    const times = starts(new SlotSchedule(30), 10_000);
    expect(times).toHaveLength(300);
    for (let i = 30; i < times.length; i++) expect(times[i]! - times[i - 30]!).toBeGreaterThanOrEqual(999.99);
  });

  it('holds every start until a pause ends', () => {
    const s = new SlotSchedule(30);
    s.take(0);
    s.pauseUntil(5_000);
    expect(s.waitMs(1_000)).toBe(4_000);
    expect(s.idle(5_000)).toBe(true);
  });

  it('with no rate, never waits', () => {
    const s = new SlotSchedule(0);
    s.take(0);
    expect(s.waitMs(0)).toBe(0);
  });
});

describe('SlotSchedule with late timers', () => {
  it('keeps the full rate when every start comes a few milliseconds late', () => {
    const s = new SlotSchedule(30);
    const times: number[] = [];
    for (let t = 0; t < 10_000;) {
      const wait = s.waitMs(t);
      if (wait > 0) {
        t += wait + 3; // the timer fires 3 ms late
        continue;
      }
      s.take(t);
      times.push(t);
    }
    expect(times.length).toBeGreaterThanOrEqual(299);
    // Never ahead of the grid: the k-th start is at or after k slots.
    times.forEach((t, k) => expect(t).toBeGreaterThanOrEqual(k * (1000 / 30) - 1e-9));
  });
});
