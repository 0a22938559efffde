import { describe, expect, it } from 'vitest';
import { Faults } from './faults.js';

describe('Faults', () => {
  it('hits only matching calls, in the order added, and is spent after its count', () => {
    const faults = new Faults();
    faults.add({ kind: '5xx', messenger: 'telegram', token: 't1', method: 'sendMessage', count: 2 });
    faults.add({ kind: '429', count: 1 });
    expect(faults.take('max', 'm1', 'messages')?.kind).toBe('429');
    expect(faults.take('max', 'm1', 'messages')).toBeUndefined();
    expect(faults.take('telegram', 't2', 'sendMessage')).toBeUndefined();
    expect(faults.take('telegram', 't1', 'getUpdates')).toBeUndefined();
    expect(faults.take('telegram', 't1', 'SENDMESSAGE')?.kind).toBe('5xx');
    expect(faults.list()[0]!.remaining).toBe(1);
    expect(faults.take('telegram', 't1', 'sendmessage')?.kind).toBe('5xx');
    expect(faults.list()).toHaveLength(0);
  });

  it('can be removed one by one or all at once', () => {
    const faults = new Faults();
    const a = faults.add({ kind: 'latency', ms: 10, count: 5 });
    faults.add({ kind: 'timeout', count: 5 });
    expect(faults.remove(a.id)).toBe(true);
    expect(faults.remove(a.id)).toBe(false);
    faults.clear();
    expect(faults.take('telegram', 't', 'getMe')).toBeUndefined();
  });
});
