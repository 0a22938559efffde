// Every consumer group is made by createEventConsumer, whose dead-letter sink is required: what poison.int.test.ts
// shows of it holds for each. What remains to check is that no service's group keeps what it sets aside
// nowhere: NO_DEAD_LETTER_TABLE is for tools and tests (readToEnd, collectors), never a service's group.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { productionSourcesOutsideKafka } from './test-support/sources.js';

describe("every service's consumer groups", () => {
  it("set aside in their service's dead_letters table, none nowhere", () => {
    const files = productionSourcesOutsideKafka();
    const consumers = files.filter((f) =>
      /createEventConsumer|forgottenConsumer\(/.test(readFileSync(f, 'utf8')),
    );
    expect(consumers.length).toBeGreaterThanOrEqual(6);
    expect(files.filter((f) => readFileSync(f, 'utf8').includes('NO_DEAD_LETTER_TABLE'))).toEqual([]);
  });
});
