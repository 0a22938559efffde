import { topics, type DeliveryEvent, type TopicSpec } from '@mds/contracts';
import type { ConsumedEvent, EventPublisher, OutgoingEvent } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { nextStep, type AttemptResult, type RetryPolicy } from './domain/attempt.js';
import { SlotSchedule } from './domain/rate.js';
import type { BotDirectory } from './directory.js';
import { outcomeEvent, unreachableEvent, type Decided, type DeliveryRequest } from './events.js';
import type { Journal, StoredDelivery } from './journal.js';
import type { SenderMetrics } from './metrics.js';
import type { MessengerProvider } from './provider.js';

export interface DeliveryOptions {
  provider: MessengerProvider;
  journal: Journal;
  directory: BotDirectory;
  publisher: EventPublisher;
  logger: Logger;
  metrics: SenderMetrics;
  deliveryTopic: TopicSpec<DeliveryEvent>;
  botRatePerSecond: number;
  chatRatePerSecond: number;
  botConcurrency: number;
  sendTimeoutMs: number;
  retry: RetryPolicy;
  windowPerBot: number;
  /** How long a journal write after a provider call is retried while the database is away (60 s). */
  journalRetryMs?: number;
  now?: () => number;
  random?: () => number;
}

interface Queued {
  messageId: string;
  seq: bigint;
  partition: number;
  request: DeliveryRequest;
  deadlineMs: number;
  notBeforeMs: number;
  failures: number;
  /** The last transient error, for the description if the deadline passes. */
  lastError?: string;
  /** Found claimed by a process that may be gone: settled as unconfirmed once its call surely ended. */
  orphanedClaim: boolean;
  inFlight: boolean;
}

interface Lane {
  botId: string;
  partition: number;
  queue: Queued[];
  inFlight: number;
  schedule: SlotSchedule;
  chats: Map<string, SlotSchedule>;
  floods: number;
  /** Deliveries of this bot wait in the journal beyond what is queued here. */
  overflow: boolean;
  refilling: boolean;
  insertedDuringRefill: boolean;
  lastQueuedSeq: bigint;
  timer: NodeJS.Timeout | undefined;
  wakeAtMs: number;
  /** A read of the lane's open work from the start, due once a claim lost elsewhere has surely ended. */
  recheck: NodeJS.Timeout | undefined;
}

const decode = (bytes: Uint8Array, spec: TopicSpec<DeliveryEvent>) =>
  spec.codec.decode(bytes) as DeliveryRequest;

/**
 * Routed deliveries of the bots whose partitions this replica owns: stored in the journal as they are
 * consumed, then sent per bot at the bot's and each chat's rate, retried and decided, one outcome each.
 * Each bot has its own lane, so a slow, failing or rate-limited bot never holds up another bot.
 */
export function createDeliveries(o: DeliveryOptions) {
  const now = o.now ?? Date.now;
  const random = o.random ?? Math.random;
  const log = o.logger;
  const lanes = new Map<string, Lane>();
  const known = new Set<string>();
  let owned = new Set<number>();
  let paused = true;
  let stopping = false;
  const inFlightWork = new Set<Promise<void>>();
  // Outcomes stored but not yet confirmed in Kafka: republished until they are.
  const publishing = new Set<string>();
  const abandonAfterMs = o.sendTimeoutMs + 10_000;

  /**
   * A journal write after the provider answered. Retried while the database is away (a restart, a
   * failover): giving up would reload the message from the journal as an interrupted claim and fail it
   * DELIVERY_UNCONFIRMED although its result is known here. Safe to repeat: the writes are
   * compare-and-set on this replica's claim, and storing the same outcome again is idempotent.
   */
  async function persist<T>(messageId: string, what: string, write: () => Promise<T>): Promise<T> {
    const giveUpAt = now() + (o.journalRetryMs ?? 60_000);
    for (let delay = 250; ; delay = Math.min(delay * 2, 5_000)) {
      try {
        return await write();
      } catch (error) {
        if (stopping || now() + delay > giveUpAt) throw error;
        log.warn({ err: error, messageId }, `${what} failed; retrying`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  function laneOf(botId: string, partition: number): Lane {
    let lane = lanes.get(botId);
    if (!lane) {
      lane = {
        botId,
        partition,
        queue: [],
        inFlight: 0,
        schedule: new SlotSchedule(o.botRatePerSecond),
        chats: new Map(),
        floods: 0,
        overflow: false,
        refilling: false,
        insertedDuringRefill: false,
        lastQueuedSeq: 0n,
        timer: undefined,
        wakeAtMs: Number.POSITIVE_INFINITY,
        recheck: undefined,
      };
      lanes.set(botId, lane);
    }
    return lane;
  }

  function enqueue(lane: Lane, d: StoredDelivery): void {
    if (known.has(d.messageId)) return;
    known.add(d.messageId);
    const request = decode(d.request, o.deliveryTopic);
    lane.queue.push({
      messageId: d.messageId,
      seq: d.seq,
      partition: d.partition,
      request,
      deadlineMs: d.deliverBefore.getTime(),
      notBeforeMs:
        d.status === 'sending'
          ? (d.claimedAt?.getTime() ?? 0) + abandonAfterMs
          : (d.notBefore?.getTime() ?? 0),
      failures: d.failures,
      orphanedClaim: d.status === 'sending',
      inFlight: false,
    });
    if (d.seq > lane.lastQueuedSeq) lane.lastQueuedSeq = d.seq;
    o.metrics.queued.inc();
  }

  function forget(lane: Lane, item: Queued): void {
    if (lanes.get(lane.botId) !== lane) return forgetInDroppedLane(lane, item);
    const i = lane.queue.indexOf(item);
    if (i >= 0) lane.queue.splice(i, 1);
    known.delete(item.messageId);
    o.metrics.queued.dec();
    if (lane.overflow && lane.queue.length < o.windowPerBot / 2) void refill(lane);
  }

  /** Reads the bot's open work in the journal again from its first row (what is queued already is kept). */
  function rereadFromStart(lane: Lane): void {
    lane.overflow = true;
    lane.lastQueuedSeq = 0n;
    void refill(lane);
  }

  /**
   * Its claim failed: it was decided meanwhile, or another replica claimed it, having owned the partition
   * for a moment during a rebalance. That replica's call may yet give it back for a retry, and then no lane
   * would hold it (refills read on from the last queued seq). So once such a call has surely ended, the
   * lane reads its open work again from the start.
   */
  function claimFailed(lane: Lane, item: Queued): void {
    forget(lane, item);
    if (lane.recheck || stopping) return;
    lane.recheck = setTimeout(() => {
      lane.recheck = undefined;
      if (lanes.get(lane.botId) === lane) rereadFromStart(lane);
    }, abandonAfterMs);
  }

  /**
   * A call of a lane dropped while it ran (its partition was revoked) has ended; the journal holds what
   * came of it. The dropped lane's memory is gone, so nothing is forgotten there. If the partition came
   * back meanwhile, the new lane holds the same message as an interrupted claim: it reads it again from
   * the journal now instead of waiting out the claim.
   */
  function forgetInDroppedLane(lane: Lane, item: Queued): void {
    const current = lanes.get(lane.botId);
    const twin = current?.queue.find((q) => q.messageId === item.messageId && !q.inFlight);
    if (!current || !twin) return;
    forget(current, twin);
    rereadFromStart(current);
  }

  function wake(lane: Lane, atMs: number): void {
    if (lane.timer && lane.wakeAtMs <= atMs) return;
    clearTimeout(lane.timer);
    lane.wakeAtMs = atMs;
    lane.timer = setTimeout(
      () => {
        lane.timer = undefined;
        lane.wakeAtMs = Number.POSITIVE_INFINITY;
        pump(lane);
      },
      Math.max(0, atMs - now()),
    );
  }

  function chatSchedule(lane: Lane, chatId: string): SlotSchedule | undefined {
    if (o.chatRatePerSecond <= 0) return undefined;
    let s = lane.chats.get(chatId);
    if (!s) {
      s = new SlotSchedule(o.chatRatePerSecond);
      lane.chats.set(chatId, s);
    }
    return s;
  }

  /**
   * Starts what may start now: the bot's next slot, then the first queued message whose chat may take
   * one (messages to one chat keep their order: a chat's first waiting message blocks its later ones).
   */
  function pump(lane: Lane): void {
    if (paused || stopping || lanes.get(lane.botId) !== lane) return;
    while (lane.inFlight < o.botConcurrency) {
      const t = now();
      const botWait = lane.schedule.waitMs(t);
      if (botWait > 0) return wake(lane, t + botWait);
      let earliest = Number.POSITIVE_INFINITY;
      const seenChats = new Set<string>();
      let pick: Queued | undefined;
      for (const item of lane.queue) {
        const chatId = item.request.event.value.chat?.chatId ?? '';
        if (seenChats.has(chatId)) continue;
        seenChats.add(chatId);
        if (item.inFlight) continue;
        const chatWait = item.orphanedClaim ? 0 : (chatSchedule(lane, chatId)?.waitMs(t) ?? 0);
        const readyAt = Math.max(item.notBeforeMs, t + chatWait);
        if (readyAt <= t) {
          pick = item;
          break;
        }
        earliest = Math.min(earliest, readyAt);
      }
      if (!pick) {
        if (earliest < Number.POSITIVE_INFINITY) wake(lane, earliest);
        return;
      }
      pick.inFlight = true;
      lane.inFlight++;
      if (!pick.orphanedClaim) {
        lane.schedule.take(t);
        chatSchedule(lane, pick.request.event.value.chat?.chatId ?? '')?.take(t);
      }
      const work = (pick.orphanedClaim ? settleOrphan(lane, pick) : attempt(lane, pick))
        .catch((error: unknown) => {
          // The journal could not be reached: whether the claim or outcome was stored is unknown. The
          // message leaves memory and comes back from the journal (refill), where its state is the truth.
          log.error(
            { err: error, messageId: pick.messageId },
            'delivery step failed; reloading it from the journal',
          );
          lane.overflow = true;
          lane.lastQueuedSeq = 0n;
          forget(lane, pick);
          wake(lane, now() + 1_000);
        })
        .finally(() => {
          pick.inFlight = false;
          lane.inFlight--;
          inFlightWork.delete(work);
          pump(lane);
        });
      inFlightWork.add(work);
    }
  }

  async function send(lane: Lane, item: Queued): Promise<AttemptResult> {
    const d = item.request.event.value;
    let bot = await o.directory.credentials(lane.botId);
    if (!bot) return { kind: 'unauthorized', description: 'the bot is no longer registered' };
    const message = {
      chatId: d.chat?.chatId ?? '',
      userId: d.chat?.userId ?? '',
      text: d.text,
      buttons: d.buttons,
    };
    const started = performance.now();
    let result = await o.provider.send(bot, message, AbortSignal.timeout(o.sendTimeoutMs));
    if (result.kind === 'unauthorized') {
      // The token may have been replaced in the registry since it was cached: one more try with a fresh one.
      o.directory.forget(lane.botId);
      const fresh = await o.directory.credentials(lane.botId);
      if (fresh && fresh.token !== bot.token) {
        bot = fresh;
        result = await o.provider.send(bot, message, AbortSignal.timeout(o.sendTimeoutMs));
      }
    }
    o.metrics.providerSeconds.observe({ result: result.kind }, (performance.now() - started) / 1000);
    return result;
  }

  async function attempt(lane: Lane, item: Queued): Promise<void> {
    if (now() > item.deadlineMs) {
      // Its deadline passed while it waited (for a retry after failures, or its turn): no call at all.
      const claimed = await o.journal.claim(item.messageId);
      if (claimed === undefined) return claimFailed(lane, item);
      await decide(
        lane,
        item,
        claimed,
        item.failures > 0
          ? {
              kind: 'failed',
              code: 'PROVIDER_ERROR',
              description: `the messenger kept failing until the delivery deadline${item.lastError ? `; last error: ${item.lastError}` : ''}`,
            }
          : {
              kind: 'failed',
              code: 'RATE_LIMITED_PAST_DEADLINE',
              description: 'the message waited for its turn past its delivery deadline',
            },
      );
      return;
    }
    const attemptNo = await o.journal.claim(item.messageId);
    if (attemptNo === undefined) return claimFailed(lane, item);
    const result = await send(lane, item);
    o.metrics.attempts.inc({ result: result.kind });
    const step = nextStep(result, {
      nowMs: now(),
      deadlineMs: item.deadlineMs,
      failures: item.failures + (result.kind === 'transient' ? 1 : 0),
      botFloods: lane.floods + 1,
      random: random(),
      policy: o.retry,
    });
    if (result.kind === 'rate-limited') {
      lane.floods++;
      o.metrics.floods.inc();
      log.warn({ botId: lane.botId, retryAfterMs: result.retryAfterMs }, 'flood control: the bot waits');
    } else if (result.kind === 'sent') lane.floods = 0;
    if (step.kind === 'retry') {
      if (step.pauseBotUntilMs) lane.schedule.pauseUntil(step.pauseBotUntilMs);
      const failed = result.kind === 'transient';
      const released = await persist(item.messageId, 'giving a message back for a retry', () =>
        o.journal.release({ messageId: item.messageId, notBefore: new Date(step.atMs), failed }),
      );
      if (!released) return forget(lane, item);
      item.notBeforeMs = step.atMs;
      if (failed) {
        item.failures++;
        item.lastError = result.description;
      }
      if (result.kind === 'transient')
        log.info(
          { messageId: item.messageId, botId: lane.botId, error: result.description },
          'send failed; will retry',
        );
      return;
    }
    await decide(lane, item, attemptNo, step);
  }

  /** Stores the outcome (compare-and-set on our claim), then publishes it. */
  async function decide(lane: Lane, item: Queued, attempts: number, decided: Decided): Promise<void> {
    const at = new Date(now());
    const outcome = outcomeEvent(item.request, decided, attempts, at, o.provider.producer);
    const sideEffect =
      decided.kind === 'failed' && decided.unreachable
        ? unreachableEvent(item.request, decided.unreachable, at, o.provider.producer)
        : undefined;
    const settled = {
      messageId: item.messageId,
      status: decided.kind,
      outcome: Buffer.from(topics.message.codec.encode(outcome)),
      ...(sideEffect ? { sideEffect: Buffer.from(topics.botUpdate.codec.encode(sideEffect)) } : {}),
    };
    const stored = await persist(item.messageId, 'storing an outcome', () => o.journal.settle(settled));
    forget(lane, item);
    if (!stored) return; // another owner decided it
    o.metrics.outcomes.inc({ outcome: decided.kind === 'sent' ? 'sent' : decided.code });
    publishOutcome(item.messageId, lane.botId, outcome, sideEffect);
  }

  /** A claim found without an outcome: once its call has surely ended, the documented rule decides. */
  async function settleOrphan(lane: Lane, item: Queued): Promise<void> {
    const at = new Date(now());
    const outcome = outcomeEvent(
      item.request,
      {
        kind: 'failed',
        code: 'DELIVERY_UNCONFIRMED',
        description:
          'the sender stopped while the messenger was handling this message; it may have reached the person and is not sent again, to avoid a duplicate',
      },
      0,
      at,
      o.provider.producer,
    );
    const settled = await o.journal.settleAbandoned(
      {
        messageId: item.messageId,
        status: 'failed',
        outcome: Buffer.from(topics.message.codec.encode(outcome)),
      },
      new Date(at.getTime() - abandonAfterMs + 1),
    );
    forget(lane, item);
    if (settled) {
      o.metrics.outcomes.inc({ outcome: 'DELIVERY_UNCONFIRMED' });
      log.warn(
        { messageId: item.messageId, botId: lane.botId },
        'an interrupted send was failed as unconfirmed',
      );
      publishOutcome(item.messageId, lane.botId, outcome, undefined);
    } else {
      // It was decided or given back meanwhile: the journal says which.
      rereadFromStart(lane);
    }
  }

  function publishOutcome(
    messageId: string,
    botId: string,
    outcome: OutgoingEvent['record'],
    sideEffect: OutgoingEvent['record'] | undefined,
  ): void {
    if (publishing.has(messageId)) return;
    publishing.add(messageId);
    const events: OutgoingEvent[] = [{ topic: topics.message, key: messageId, record: outcome }];
    if (sideEffect)
      events.push({
        topic: topics.botUpdate,
        key: botId,
        record: sideEffect,
      });
    const work = (async () => {
      for (let delay = 500; ; delay = Math.min(delay * 2, 30_000)) {
        try {
          await o.publisher.publish(events);
          await o.journal.markPublished(messageId);
          return;
        } catch (error) {
          // Stored, so never lost: the next owner of the partition publishes the journal's unpublished ones.
          if (stopping) return;
          log.warn({ err: error, messageId }, 'publishing an outcome failed; retrying');
          await new Promise((r) => setTimeout(r, delay));
        }
      }
    })().finally(() => {
      publishing.delete(messageId);
      inFlightWork.delete(work);
    });
    inFlightWork.add(work);
  }

  async function refill(lane: Lane): Promise<void> {
    if (lane.refilling || !owned.has(lane.partition) || lanes.get(lane.botId) !== lane) return;
    lane.refilling = true;
    try {
      do {
        lane.insertedDuringRefill = false;
        const room = o.windowPerBot - lane.queue.length;
        if (room <= 0) return;
        const rows = await o.journal.openOfBot(lane.botId, lane.lastQueuedSeq, room);
        for (const row of rows) enqueue(lane, row);
        lane.overflow = rows.length >= room || lane.insertedDuringRefill;
      } while (lane.insertedDuringRefill);
      pump(lane);
    } catch (error) {
      log.error({ err: error, botId: lane.botId }, 'could not read queued deliveries; retrying');
      setTimeout(() => void refill(lane), 2_000).unref();
    } finally {
      lane.refilling = false;
    }
  }

  /** Republishes outcomes stored by an earlier owner that may not have reached Kafka. */
  async function republish(partitions: number[]): Promise<void> {
    for (const d of await o.journal.unpublished(partitions)) {
      const outcome = topics.message.codec.decode(d.outcome!);
      const side = d.sideEffect ? topics.botUpdate.codec.decode(d.sideEffect) : undefined;
      publishOutcome(d.messageId, d.botId, outcome, side);
    }
  }

  async function adopt(partitions: number[]): Promise<void> {
    for (const botId of await o.journal.botsWithOpenWork(partitions)) {
      const rows = await o.journal.openOfBot(botId, 0n, o.windowPerBot);
      if (rows.length === 0) continue;
      const lane = laneOf(botId, rows[0]!.partition);
      for (const row of rows) enqueue(lane, row);
      lane.overflow = rows.length >= o.windowPerBot;
      pump(lane);
    }
    await republish(partitions);
  }

  function drop(lane: Lane): void {
    clearTimeout(lane.timer);
    clearTimeout(lane.recheck);
    for (const item of lane.queue) {
      known.delete(item.messageId);
      o.metrics.queued.dec();
    }
    lane.queue = [];
    lanes.delete(lane.botId);
  }

  return {
    /** The consumer's handler: stores a batch of routed deliveries; the offsets move after this. */
    async store(events: ConsumedEvent<DeliveryEvent>[]): Promise<void> {
      const rows = events.flatMap((e) => {
        if (e.record.event.$case !== 'deliveryRequested') return [];
        const d = e.record.event.value;
        return [
          {
            messageId: d.messageId,
            botId: d.chat?.botId ?? '',
            partition: e.partition,
            request: Buffer.from(o.deliveryTopic.codec.encode(e.record)),
            deliverBefore: d.deliverBefore ?? new Date(0),
          },
        ];
      });
      const inserted = await o.journal.insert(rows);
      // Already in the journal yet not queued here: stored by a replica that owned the partition a moment
      // ago (a rebalance) after this one read the partition's open work. Read the bot's open work again, so
      // that such a message has a lane.
      const insertedIds = new Set(inserted.map((d) => d.messageId));
      const reread = new Set<Lane>();
      for (const row of rows)
        if (!insertedIds.has(row.messageId) && !known.has(row.messageId) && owned.has(row.partition))
          reread.add(laneOf(row.botId, row.partition));
      for (const lane of reread) rereadFromStart(lane);
      for (const d of inserted) {
        if (!owned.has(d.partition)) continue;
        const lane = laneOf(d.botId, d.partition);
        if (lane.refilling) lane.insertedDuringRefill = true;
        if (lane.overflow || lane.queue.length >= o.windowPerBot) {
          lane.overflow = true;
          continue;
        }
        enqueue(lane, d);
        pump(lane);
      }
    },

    /** The delivery topic's partitions this replica owns now (empty while the group rebalances). */
    assign(partitions: readonly number[]): void {
      const next = new Set(partitions);
      const gained = [...next].filter((p) => !owned.has(p));
      owned = next;
      paused = next.size === 0;
      for (const lane of [...lanes.values()]) if (!next.has(lane.partition)) drop(lane);
      if (paused) return;
      for (const lane of lanes.values()) pump(lane);
      if (gained.length > 0)
        adopt(gained).catch((error: unknown) =>
          log.error(
            { err: error, partitions: gained },
            'could not load the open deliveries of new partitions',
          ),
        );
    },

    /** Stops starting calls; waits for the ones in flight to be decided and published. */
    async stop(): Promise<void> {
      stopping = true;
      for (const lane of lanes.values()) {
        clearTimeout(lane.timer);
        clearTimeout(lane.recheck);
      }
      while (inFlightWork.size > 0) await Promise.allSettled([...inFlightWork]);
    },

    /** For the poller: waits for, and takes, one slot of the bot's rate (MAX counts polls as requests). */
    async takeSlot(botId: string, partition: number, signal: AbortSignal): Promise<void> {
      const lane = laneOf(botId, partition);
      const wait = lane.schedule.waitMs(now());
      lane.schedule.take(now() + wait); // reserved now, so sends cannot take it meanwhile
      if (wait > 0)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
        });
    },

    queuedCount: () => known.size,
  };
}

export type Deliveries = ReturnType<typeof createDeliveries>;
