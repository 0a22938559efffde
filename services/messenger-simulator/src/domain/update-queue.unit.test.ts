import { describe, expect, it } from 'vitest';
import { UpdateQueue } from './update-queue.js';

function queueOf(types: string[], at = 0) {
  const queue = new UpdateQueue<string>(10, 1000);
  for (const type of types) queue.append(type, at, (id) => `${type}#${id}`);
  return queue;
}

describe('UpdateQueue', () => {
  it('numbers updates from the first id upwards and reads them in order with a limit', () => {
    const queue = queueOf(['message', 'message', 'my_chat_member']);
    expect(queue.read(0, 100).map((u) => u.payload)).toEqual([
      'message#10',
      'message#11',
      'my_chat_member#12',
    ]);
    expect(queue.read(11, 1).map((u) => u.id)).toEqual([11]);
    expect(queue.nextId).toBe(13);
  });

  it('confirmBefore forgets everything below the id; keepLast keeps the newest', () => {
    const queue = queueOf(['a', 'b', 'c', 'd']);
    queue.confirmBefore(12);
    expect(queue.read(0, 100).map((u) => u.id)).toEqual([12, 13]);
    queue.keepLast(1);
    expect(queue.read(0, 100).map((u) => u.id)).toEqual([13]);
  });

  it('scan filters by type and says where the next read starts, past skipped types and at the limit', () => {
    const queue = queueOf(['bot_started', 'message_created', 'bot_stopped', 'message_created']);
    const first = queue.scan(0, 1, new Set(['message_created']));
    expect(first.items.map((u) => u.id)).toEqual([11]);
    expect(first.next).toBe(12);
    const rest = queue.scan(first.next, 10, new Set(['message_created']));
    expect(rest.items.map((u) => u.id)).toEqual([13]);
    expect(rest.next).toBe(14);
    expect(queue.scan(99, 10).next).toBe(99);
  });

  it('prunes updates older than the retention', () => {
    const queue = new UpdateQueue<string>(1, 1000);
    queue.append('a', 0, () => 'old');
    queue.append('b', 600, () => 'young');
    queue.prune(1500);
    expect(queue.read(0, 10).map((u) => u.payload)).toEqual(['young']);
  });
});
