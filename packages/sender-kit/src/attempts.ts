import { isErased, openRecords, SealedDataError, type PersonKeyPort } from '@mds/personal-data';
import { retryUntil } from '@mds/async';
import { RegistryError } from '@mds/registry-client';
import { messageErrorCodes, topics } from '@mds/contracts';
import type { Logger } from '@mds/logging';
import { inHop, SpanKind } from '@mds/telemetry';
import { backoffMs, nextStep, type AttemptResult, type RetryPolicy } from './domain/attempt.js';
import type { BotDirectory } from '@mds/registry-client';
import { outcomeEvent, unreachableEvent, type Decided } from './events.js';
import type { Journal, StoredDelivery } from './journal.js';
import type { Item, Lane } from './lanes.js';
import type { SenderMetrics } from './metrics.js';
import type { OutcomePublisher } from './outcomes.js';
import type { BotCredentials, MessengerProvider } from './provider.js';

/** What one message's turn needs from the delivery mechanism around it. */
export interface AttemptContext {
  provider: MessengerProvider;
  journal: Journal;
  directory: BotDirectory;
  personKeys: PersonKeyPort;
  outcomes: OutcomePublisher;
  metrics: SenderMetrics;
  logger: Logger;
  /** The journal's name for this replica's claims. */
  instanceId: string;
  sendTimeoutMs: number;
  retry: RetryPolicy;
  unconfirmed: 'fail' | 'retry';
  /** How long a journal write after a call is retried while the database is away. */
  journalRetryMs: number;
  /** How soon a message claimed by a process that may be gone is looked at again. */
  orphanRecheckMs: number;
  now: () => number;
  random: () => number;
  stopping: () => boolean;
  /** Takes the message out of its lane (decided, given to the journal, or another's now). */
  forget(lane: Lane, item: Item): void;
  /** Its claim was lost to another replica: the lane reads its open work again once that claim surely ended. */
  claimLost(lane: Lane, item: Item): void;
}

type Claim = { kind: 'claimed'; attempts: number } | { kind: 'not-ours' };

const releaseAcks = (item: Item) => {
  for (const ack of item.acks.splice(0)) ack();
};

/** What became of a message whose row was there already: decided, parked, or claimed by someone else. */
function adoptRow(c: AttemptContext, lane: Lane, item: Item, row: StoredDelivery): void {
  if (row.status === 'sent' || row.status === 'failed') {
    c.outcomes.republish(row, item.acks.splice(0));
    c.forget(lane, item);
    return;
  }
  if (row.status === 'pending') {
    // Parked (by an owner before a rebalance, or given back for a retry): the journal holds it now.
    item.parked = true;
    item.seq = row.seq;
    item.failures = row.failures;
    item.notBeforeMs = row.notBefore?.getTime() ?? 0;
    releaseAcks(item);
    return;
  }
  // Claimed: by a process that may be gone, or by this one's lane of before a rebalance, still calling.
  item.orphan = true;
  item.notBeforeMs = row.claimAbandoned ? 0 : c.now() + c.orphanRecheckMs;
}

/** A claim of ours whose answer was lost: stored, with no call made for it. It is still ours to use. */
const ourUnusedClaim = (c: AttemptContext, item: Item, row: StoredDelivery | undefined) =>
  item.claimUncertain === true && row?.status === 'sending' && row.claimedBy === c.instanceId;

/** Claims in the journal, noting when the database left it unknown whether the claim was stored. */
async function claimIn<T>(item: Item, claimOnce: () => Promise<T>): Promise<T> {
  try {
    const answer = await claimOnce();
    return answer;
  } catch (error) {
    item.claimUncertain = true;
    throw error;
  }
}

async function claim(c: AttemptContext, lane: Lane, item: Item): Promise<Claim> {
  if (item.parked) {
    const attempts = await claimIn(item, () => c.journal.claimParked(item.messageId));
    if (attempts !== undefined) return ((item.claimUncertain = false), { kind: 'claimed', attempts });
    const [row] = item.claimUncertain ? await c.journal.rowsOf([item.messageId]) : [];
    if (ourUnusedClaim(c, item, row))
      return ((item.claimUncertain = false), { kind: 'claimed', attempts: row!.attempts });
    c.claimLost(lane, item);
    return { kind: 'not-ours' };
  }
  const answer = await claimIn(item, () =>
    c.journal.claimNew({
      messageId: item.messageId,
      botId: lane.botId,
      partition: lane.partition,
      request: item.requestBytes,
      deliverBefore: new Date(item.deadlineMs),
    }),
  );
  if (typeof answer === 'number')
    return ((item.claimUncertain = false), { kind: 'claimed', attempts: answer });
  if (ourUnusedClaim(c, item, answer))
    return ((item.claimUncertain = false), { kind: 'claimed', attempts: answer!.attempts });
  if (answer) adoptRow(c, lane, item, answer);
  else {
    // Another replica wrote its row this very moment: see what became of it a little later.
    item.orphan = true;
    item.notBeforeMs = c.now() + c.orphanRecheckMs;
  }
  return { kind: 'not-ours' };
}

/**
 * A journal write after the provider answered. Retried while the database is away (a restart, a
 * failover), until `giveUpAt`: the claim's longest life, after which another owner may take it over as
 * abandoned. Safe to repeat: the writes are compare-and-set on this replica's claim, and storing the same
 * outcome again is idempotent.
 */
async function persist<T>(
  c: AttemptContext,
  item: Item,
  what: string,
  giveUpAt: number,
  write: () => Promise<T>,
): Promise<T> {
  return retryUntil(write, {
    initialMs: 250,
    maxMs: 5_000,
    shouldRetry: (_error, _attempt, waitMs) => !c.stopping() && c.now() + waitMs <= giveUpAt,
    onRetry: (error) => c.logger.warn({ err: error, messageId: item.messageId }, `${what} failed; retrying`),
  });
}

/**
 * The delivery's text and buttons, opened with the person's key. A forgotten person's message fails
 * (CLIENT_FORGOTTEN) instead of being sent empty; a key that cannot be had now is a transient failure.
 */
async function opened(
  c: AttemptContext,
  item: Item,
): Promise<{ ok: true; value: Item['request']['event']['value'] } | { ok: false; result: AttemptResult }> {
  let request: Item['request'];
  try {
    [request] = (await openRecords(c.personKeys, [item.request])) as [Item['request']];
  } catch (error) {
    if (error instanceof SealedDataError)
      return { ok: false, result: { kind: 'rejected', code: 'INVALID_MESSAGE', description: error.message } };
    return {
      ok: false,
      result: { kind: 'transient', description: `person key unavailable: ${(error as Error).message}` },
    };
  }
  if (isErased(request.event.value))
    return {
      ok: false,
      result: { kind: 'rejected', code: 'CLIENT_FORGOTTEN', description: messageErrorCodes.CLIENT_FORGOTTEN },
    };
  return { ok: true, value: request.event.value };
}

async function send(c: AttemptContext, lane: Lane, bot: BotCredentials, item: Item): Promise<AttemptResult> {
  const open = await opened(c, item);
  if (!open.ok) return open.result;
  const d = open.value;
  const message = {
    chatId: d.chat?.chatId ?? '',
    userId: d.chat?.userId ?? '',
    text: d.text,
    buttons: d.buttons,
  };
  const started = performance.now();
  let result = await c.provider.send(bot, message, AbortSignal.timeout(c.sendTimeoutMs));
  if (result.kind === 'unauthorized') {
    // The token may have been replaced in the registry since it was cached: one more try with a fresh one.
    c.directory.forget(lane.botId);
    const fresh = await c.directory.credentials(lane.botId).catch(() => undefined);
    if (fresh && fresh.token !== bot.token)
      result = await c.provider.send(fresh, message, AbortSignal.timeout(c.sendTimeoutMs));
  }
  c.metrics.providerSeconds.observe({ result: result.kind }, (performance.now() - started) / 1000);
  return result;
}

/** Stores the outcome (compare-and-set on our claim), then publishes it. */
async function decide(
  c: AttemptContext,
  lane: Lane,
  item: Item,
  attempts: number,
  decided: Decided,
  giveUpAt: number,
): Promise<void> {
  const at = new Date(c.now());
  const outcome = outcomeEvent(item.request, decided, attempts, at, c.provider.producer);
  const sideEffect =
    decided.kind === 'failed' && decided.unreachable
      ? unreachableEvent(item.request, decided.unreachable, at, c.provider.producer)
      : undefined;
  const settled = {
    messageId: item.messageId,
    status: decided.kind,
    outcome: Buffer.from(topics.message.codec.encode(outcome)),
    ...(sideEffect ? { sideEffect: Buffer.from(topics.botUpdate.codec.encode(sideEffect)) } : {}),
  };
  await storeOutcome(c, lane, item, settled, outcome, sideEffect, decided, giveUpAt);
}

/**
 * Stores a decided outcome (compare-and-set on our claim) and publishes it. If the database stays away
 * past the claim's life, what is left is kept with the message, and its next turn tries again: whether
 * this outcome or an abandoned claim's is stored first, the journal keeps one.
 */
async function storeOutcome(
  c: AttemptContext,
  lane: Lane,
  item: Item,
  settled: Parameters<Journal['settle']>[0],
  outcome: ReturnType<typeof outcomeEvent>,
  sideEffect: ReturnType<typeof unreachableEvent> | undefined,
  decided: Decided,
  giveUpAt: number,
): Promise<void> {
  let stored: boolean;
  try {
    stored = await persist(c, item, 'storing an outcome', giveUpAt, () => c.journal.settle(settled));
  } catch (error) {
    item.resume = () => storeOutcome(c, lane, item, settled, outcome, sideEffect, decided, claimLife(c));
    throw error;
  }
  if (!stored) {
    // Another owner decided it (it took our claim over as abandoned): its outcome is the one.
    const [row] = await c.journal.rowsOf([item.messageId]);
    if (row) adoptRow(c, lane, item, row);
    else c.forget(lane, item);
    return;
  }
  c.forget(lane, item);
  c.metrics.outcomes.inc({ outcome: decided.kind === 'sent' ? 'sent' : decided.code });
  c.outcomes.publish(item.messageId, lane.botId, outcome, sideEffect, {
    parked: item.parked,
    acks: item.acks.splice(0),
  });
}

function pastDeadline(item: Item): Decided {
  if (item.failures > 0)
    return {
      kind: 'failed',
      code: 'PROVIDER_ERROR',
      description: `the messenger kept failing until the delivery deadline${item.lastError ? `; last error: ${item.lastError}` : ''}`,
    };
  if (item.lastError)
    return {
      kind: 'failed',
      code: 'PROVIDER_ERROR',
      description: `the bot's credentials could not be read until the delivery deadline; last error: ${item.lastError}`,
    };
  return {
    kind: 'failed',
    code: 'RATE_LIMITED_PAST_DEADLINE',
    description: 'the message waited for its turn past its delivery deadline',
  };
}

/** A claim's longest life, from now: two calls (a refused token is tried once more), then storing the result. */
const claimLife = (c: AttemptContext) => c.now() + 2 * c.sendTimeoutMs + c.journalRetryMs;

/**
 * One turn of a queued message as one hop of its trace: a span continuing the routing decision's (read
 * from Kafka or, for a parked message, from its journal row), parent of the messenger call and of the
 * outcome event.
 */
export function attempt(c: AttemptContext, lane: Lane, item: Item): Promise<void> {
  return inHop(`${c.provider.producer} send`, item.request.metadata, () => turn(c, lane, item), {
    kind: SpanKind.CONSUMER,
    attributes: { 'mds.message_id': item.messageId, 'mds.bot_id': lane.botId },
  });
}

/** One turn of a queued message: at most one provider call, claimed in the journal before it is made. */
async function turn(c: AttemptContext, lane: Lane, item: Item): Promise<void> {
  const resume = item.resume;
  if (resume) {
    item.resume = undefined;
    return resume();
  }
  if (c.now() > item.deadlineMs) {
    // Its deadline passed while it waited (for a retry after failures, or its turn): no call at all.
    const claimed = await claim(c, lane, item);
    if (claimed.kind === 'claimed')
      await decide(c, lane, item, claimed.attempts, pastDeadline(item), claimLife(c));
    return;
  }
  // The credentials first: a lookup that fails leaves no claim, so nothing is reported unconfirmed.
  let bot: BotCredentials | undefined;
  try {
    bot = await c.directory.credentials(lane.botId);
  } catch (error) {
    const message = (error as Error).message;
    item.lastError = error instanceof RegistryError ? message : `client-registry: ${message}`;
    item.notBeforeMs = c.now() + backoffMs(2, c.retry, c.random());
    c.logger.warn({ botId: lane.botId, err: error }, "could not read the bot's credentials; will retry");
    return;
  }
  const claimed = await claim(c, lane, item);
  if (claimed.kind !== 'claimed') return;
  const giveUpAt = claimLife(c);
  const result: AttemptResult = bot
    ? await send(c, lane, bot, item)
    : { kind: 'unauthorized', description: 'the bot is no longer registered' };
  c.metrics.attempts.inc({ result: result.kind });
  const step = nextStep(result, {
    nowMs: c.now(),
    deadlineMs: item.deadlineMs,
    failures: item.failures + (result.kind === 'transient' || result.kind === 'unconfirmed' ? 1 : 0),
    botFloods: lane.floods + 1,
    random: c.random(),
    policy: c.retry,
    unconfirmed: c.unconfirmed,
  });
  if (result.kind === 'rate-limited') {
    lane.floods++;
    c.metrics.floods.inc();
    c.logger.warn({ botId: lane.botId, retryAfterMs: result.retryAfterMs }, 'flood control: the bot waits');
  } else if (result.kind === 'sent') lane.floods = 0;
  if (step.kind !== 'retry') return decide(c, lane, item, claimed.attempts, step, giveUpAt);

  if (step.pauseBotUntilMs) lane.schedule.pauseUntil(step.pauseBotUntilMs);
  const failed = result.kind === 'transient' || result.kind === 'unconfirmed';
  if (failed) {
    item.failures++;
    item.lastError = result.description;
    c.logger.info(
      { messageId: item.messageId, botId: lane.botId, error: result.description },
      'send failed; will retry',
    );
  }
  await giveBack(c, lane, item, step.atMs, failed, giveUpAt);
}

/** Gives a claimed message back for a retry at `atMs`: parked from then on, its Kafka offsets let go of. */
async function giveBack(
  c: AttemptContext,
  lane: Lane,
  item: Item,
  atMs: number,
  failed: boolean,
  giveUpAt: number,
): Promise<void> {
  let released: boolean;
  try {
    released = await persist(c, item, 'giving a message back for a retry', giveUpAt, () =>
      c.journal.release({ messageId: item.messageId, notBefore: new Date(atMs), failed }),
    );
  } catch (error) {
    item.resume = () => giveBack(c, lane, item, atMs, failed, claimLife(c));
    throw error;
  }
  if (!released) return c.forget(lane, item);
  // Parked from now on: its row keeps it, so its Kafka offset may move on.
  item.parked = true;
  releaseAcks(item);
  item.notBeforeMs = atMs;
}

/** A claim found without an outcome: once it is surely abandoned, the documented rule decides it. */
export async function settleOrphan(c: AttemptContext, lane: Lane, item: Item): Promise<void> {
  const at = new Date(c.now());
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
    c.provider.producer,
  );
  const settled = await c.journal.settleAbandoned({
    messageId: item.messageId,
    status: 'failed',
    outcome: Buffer.from(topics.message.codec.encode(outcome)),
  });
  if (settled) {
    c.forget(lane, item);
    c.metrics.outcomes.inc({ outcome: 'DELIVERY_UNCONFIRMED' });
    c.logger.warn(
      { messageId: item.messageId, botId: lane.botId },
      'an interrupted send was failed as unconfirmed',
    );
    c.outcomes.publish(item.messageId, lane.botId, outcome, undefined, {
      parked: item.parked,
      acks: item.acks.splice(0),
    });
    return;
  }
  // Decided or given back meanwhile, or its claim is not that old yet: the journal says which.
  const [row] = await c.journal.rowsOf([item.messageId]);
  if (!row) return c.forget(lane, item);
  item.orphan = false;
  adoptRow(c, lane, item, row);
}
