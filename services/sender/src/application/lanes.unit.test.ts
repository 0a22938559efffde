import { describe, expect, it } from 'vitest';
import { Lane, type Item } from './lanes.js';
import type { DeliveryRequest } from './events.js';
import { startDelivery } from '../domain/delivery.js';

const item = (i: number): Item => ({
  messageId: `m${i}`,
  botId: 'bot',
  partition: 0,
  request: {
    event: { $case: 'deliveryRequested', value: { chat: { chatId: `chat-${i}` } } },
  } as DeliveryRequest,
  requestBytes: Buffer.alloc(0),
  acks: [],
  state: startDelivery({ type: 'Arrive', deadlineMs: Number.MAX_SAFE_INTEGER }),
});

describe('a bot lane', () => {
  it('keeps the rate schedules of recent chats only: 100,000 chats leave no more than a second of them', () => {
    // 1,000 messages a second to 100,000 different people, one a second each at most.
    const lane = new Lane('bot', 0, 1_000, 1);
    let clock = 0;
    let most = 0;
    for (let i = 0; i < 100_000; i++) {
      lane.queue.push(item(i));
      const next = lane.pick(clock, 1);
      if (!next || !('item' in next)) throw new Error(`message ${i} could not start at ${clock}`);
      lane.queue.shift();
      most = Math.max(most, lane.chatSchedules());
      clock += 1;
    }
    // At most about the chats of the last second, plus what waits for the next prune.
    expect(most).toBeLessThanOrEqual(2_000);
    lane.pruneChats(clock + 1_000);
    expect(lane.chatSchedules()).toBe(0);
  });

  it('holds a chat back until its slot, and lets another chat go meanwhile', () => {
    const lane = new Lane('bot', 0, 1_000, 1);
    const [a1, a2, b1] = [item(1), { ...item(2), request: item(1).request }, item(3)];
    lane.queue.push(a1, a2, b1);
    expect(lane.pick(0, 10)).toEqual({ item: a1 });
    lane.running.add(a1);
    // a's second message waits while a's first is in flight; b goes now.
    expect(lane.pick(5, 10)).toEqual({ item: b1 });
    lane.running.add(b1);
    expect(lane.pick(6, 10)).toBeUndefined();
    // a's first is done: its second waits for a's next slot.
    lane.queue.splice(lane.queue.indexOf(a1), 1);
    lane.running.delete(a1);
    expect(lane.pick(10, 10)).toEqual({ wakeAtMs: 1_000 });
  });

  it('lets an expired message through without a slot: an expired backlog does not slow the bot', () => {
    // One message a second for the bot.
    const lane = new Lane('bot', 0, 1, 1);
    const expired = { ...item(1), state: startDelivery({ type: 'Arrive', deadlineMs: 1e9, expiresAtMs: 5 }) };
    const fresh = item(2);
    lane.queue.push(expired, fresh);
    expect(lane.pick(10, 10)).toEqual({ item: expired });
    lane.running.add(expired);
    expect(lane.pick(10, 10)).toEqual({ item: fresh });
    lane.running.add(fresh);
    // The fresh one took the bot's slot of this second.
    lane.queue.push(item(3));
    expect(lane.pick(10, 10)).not.toHaveProperty('item');
  });
});
