import { describe, expect, it } from 'vitest';
import { partitionOfBot } from './ownership.js';

describe("a bot's partition", () => {
  it("is the partition its id is keyed to, among the topic's partitions", () => {
    const asked: [string, number][] = [];
    const partitionOf = partitionOfBot((key, count) => (asked.push([key, count]), key.length % count), 4);
    expect(partitionOf('bot-1')).toBe(1);
    expect(partitionOf('bot-12')).toBe(2);
    expect(asked).toEqual([
      ['bot-1', 4],
      ['bot-12', 4],
    ]);
  });
});
