import { describe, expect, it } from 'vitest';
import { RateLimiter } from './rate-limit.js';

const bot = { key: 'bot', spec: { ratePerS: 30, burst: 30 } };
const chat = { key: 'chat:1', spec: { ratePerS: 1, burst: 3 } };

describe('RateLimiter', () => {
  it('lets a burst through, then answers how long to wait, then refills at the rate', () => {
    const limiter = new RateLimiter(true);
    expect([0, 1, 2].map(() => limiter.take(0, [chat]))).toEqual([0, 0, 0]);
    expect(limiter.take(0, [chat])).toBe(1000);
    expect(limiter.take(400, [chat])).toBeCloseTo(600);
    expect(limiter.take(1000, [chat])).toBe(0);
    expect(limiter.take(1000, [chat])).toBe(1000);
  });

  it('takes from all buckets or none: a chat refusal leaves the bot allowance intact', () => {
    const limiter = new RateLimiter(true);
    const smallBot = { key: 'bot', spec: { ratePerS: 2, burst: 2 } };
    for (let i = 0; i < 3; i++) limiter.take(0, [chat]);
    expect(limiter.take(0, [smallBot, chat])).toBeGreaterThan(0);
    expect(limiter.take(0, [smallBot, { key: 'chat:2', spec: chat.spec }])).toBe(0);
    expect(limiter.take(0, [smallBot, { key: 'chat:3', spec: chat.spec }])).toBe(0);
    expect(limiter.take(0, [smallBot, { key: 'chat:4', spec: chat.spec }])).toBe(500);
  });

  it('30 per second per bot: the 31st message within a second is refused', () => {
    const limiter = new RateLimiter(true);
    const results = Array.from({ length: 31 }, (_, i) =>
      limiter.take(0, [bot, { key: `c${i}`, spec: chat.spec }]),
    );
    expect(results.filter((wait) => wait === 0)).toHaveLength(30);
    expect(results[30]).toBeCloseTo(1000 / 30);
  });

  it('allows everything when disabled', () => {
    const limiter = new RateLimiter(false);
    expect(Array.from({ length: 100 }, () => limiter.take(0, [chat])).every((wait) => wait === 0)).toBe(true);
  });
});
