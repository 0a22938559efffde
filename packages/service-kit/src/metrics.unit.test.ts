import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { createMetricsRegistry } from './service.js';

describe('createMetricsRegistry', () => {
  it("shows the heap live after the last full collection (a leak's signal; heap used counts garbage too)", async () => {
    const registry = createMetricsRegistry('kit-test');
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
    // GC entries reach observers after the collection, on a later turn.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const text = await registry.metrics();
    const live = /^mds_heap_after_major_gc_bytes\{service="kit-test"\} (\d+)$/m.exec(text);
    expect(live).not.toBeNull();
    expect(Number(live![1])).toBeGreaterThan(1_000_000);
  });
});
