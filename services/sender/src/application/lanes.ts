import type { DeliveryRequest } from './events.js';
import { SlotSchedule } from '../domain/rate.js';
import { expiredAt, type DeliveryState } from '../domain/delivery.js';

/**
 * A message held in memory by its bot's lane: what it is, the Kafka offsets it holds, and where its
 * delivery stands (the decider's state, replaced by each turn's events).
 */
export interface Item {
  /** Its journal key: the message id, or a fallback channel's key (domain/channel.ts). */
  messageId: string;
  botId: string;
  partition: number;
  request: DeliveryRequest;
  /** The DeliveryRequested record as read, for its journal row. */
  requestBytes: Buffer;
  /** Its offset on the delivery topic, when this replica read it from the log (not from the journal). */
  offset?: string;
  /** The Kafka offsets it holds: released once it is decided and published, or parked. */
  acks: (() => void)[];
  state: DeliveryState;
}

export const chatOf = (item: Item) => item.request.event.value.chat?.chatId ?? '';

/**
 * One bot's messages in memory, in order, with the bot's and each chat's rate. Messages to one chat keep
 * their order: a chat's first waiting message holds its later ones back.
 */
export class Lane {
  readonly queue: Item[] = [];
  /** Its messages whose turn runs now. */
  readonly running = new Set<Item>();
  readonly schedule: SlotSchedule;
  private readonly chats = new Map<string, SlotSchedule>();
  floods = 0;
  /** More of this bot's messages are parked in the journal, after `lastQueuedSeq`. */
  parkedBehind = false;
  refilling = false;
  parkedDuringRefill = false;
  lastQueuedSeq = 0n;
  timer: NodeJS.Timeout | undefined;
  wakeAtMs = Number.POSITIVE_INFINITY;
  /** A read of the bot's open work from its first row, due once a claim lost elsewhere has surely ended. */
  recheck: NodeJS.Timeout | undefined;
  private picks = 0;

  constructor(
    readonly botId: string,
    readonly partition: number,
    botRatePerSecond: number,
    private readonly chatRatePerSecond: number,
  ) {
    this.schedule = new SlotSchedule(botRatePerSecond);
  }

  private chatSchedule(chatId: string, create: boolean): SlotSchedule | undefined {
    if (this.chatRatePerSecond <= 0) return undefined;
    let s = this.chats.get(chatId);
    if (!s && create) {
      s = new SlotSchedule(this.chatRatePerSecond);
      this.chats.set(chatId, s);
    }
    return s;
  }

  /** Per-chat schedules held (one per chat sent to within the last slot of its rate). */
  chatSchedules(): number {
    return this.chats.size;
  }

  /** Forgets the schedules of chats whose last slot has passed: they start afresh (no burst is possible). */
  pruneChats(nowMs: number): void {
    for (const [chatId, s] of this.chats) if (s.idle(nowMs)) this.chats.delete(chatId);
  }

  /**
   * The next message that may start now (the bot's slot and its chat's are free), or when one may; takes
   * the slots of the one it returns. Orphaned claims and expired messages take no slot: nothing is sent for
   * them, so a backlog of expired messages does not slow the bot's others.
   */
  pick(nowMs: number, concurrency: number): { item: Item } | { wakeAtMs: number } | undefined {
    if (this.running.size >= concurrency) return undefined;
    const botWait = this.schedule.waitMs(nowMs);
    if (botWait > 0) return { wakeAtMs: nowMs + botWait };
    let earliest = Number.POSITIVE_INFINITY;
    const seenChats = new Set<string>();
    for (const item of this.queue) {
      const chatId = chatOf(item);
      if (seenChats.has(chatId)) continue;
      seenChats.add(chatId);
      if (this.running.has(item)) continue;
      const sendsNothing = item.state.status === 'watched' || expiredAt(item.state, nowMs);
      const chatWait = sendsNothing ? 0 : (this.chatSchedule(chatId, false)?.waitMs(nowMs) ?? 0);
      const readyAt = Math.max(item.state.notBeforeMs, nowMs + chatWait);
      if (readyAt > nowMs) {
        earliest = Math.min(earliest, readyAt);
        continue;
      }
      if (!sendsNothing) {
        this.schedule.take(nowMs);
        this.chatSchedule(chatId, true)?.take(nowMs);
        // Now and then, not on every pick: most chats are idle again within a second.
        if (++this.picks % 1_000 === 0) this.pruneChats(nowMs);
      }
      return { item };
    }
    return earliest < Number.POSITIVE_INFINITY ? { wakeAtMs: earliest } : undefined;
  }
}
