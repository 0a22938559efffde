import { failureKind } from '@mds/kafka';
import { RegistryError } from '@mds/registry-client';
import { inHop, SpanKind } from '@mds/telemetry';
import type { CleanText } from '@mds/contracts';
import type { AttemptResult } from '../../domain/attempt.js';
import { cleanAnswer } from '../../domain/outside-text.js';
import type { Item, Lane } from '../lanes.js';
import type { BotCredentials } from '@mds/messengers';
import { claim } from './claim.js';
import { apply, claimLife, type AttemptContext } from './context.js';
import { writeDue } from './record.js';
import { send } from './send.js';

export type { AttemptContext } from './context.js';

/**
 * A queued message's turn, the one entry into its delivery: at most one provider call, claimed in the
 * journal before it is made. Where it stands afterwards is its state (`done`: nothing left here; `lost`:
 * another replica's claim). A journal that cannot be reached leaves the message for another turn shortly;
 * a journal that refuses the message for its content throws (a `record` failure) for the lane to set it aside.
 */
export async function attempt(c: AttemptContext, lane: Lane, item: Item): Promise<void> {
  try {
    // A watched claim is no call of ours: it gets no hop of the message's trace.
    if (item.state.status === 'watched') await settleOrphan(c, item);
    else
      await inHop(`${c.provider.producer} send`, item.request.metadata, () => turn(c, lane, item), {
        kind: SpanKind.CONSUMER,
        attributes: { 'mds.message_id': item.messageId, 'mds.bot_id': lane.botId },
      });
  } catch (error) {
    if (failureKind(error) === 'record') throw error;
    // The journal could not be reached. The message stays here, and its next turn, a second later, learns
    // from the journal what came of the interrupted step (or finishes its due write).
    c.logger.error({ err: error, messageId: item.messageId }, 'delivery step failed; trying again shortly');
    apply(c, item, { type: 'Interrupt', nowMs: c.now() });
  }
}

/** A claim found without an outcome: once it is surely abandoned, the documented rule decides it. */
async function settleOrphan(c: AttemptContext, item: Item): Promise<void> {
  if (!item.state.due) apply(c, item, { type: 'CheckOrphan', nowMs: c.now() });
  await writeDue(c, item);
}

/** The credentials of the message's bot; undefined if it is no longer registered, false if unavailable now. */
async function credentials(
  c: AttemptContext,
  lane: Lane,
  item: Item,
): Promise<BotCredentials | undefined | false> {
  try {
    return await c.directory.credentials(lane.botId);
  } catch (error) {
    const message = (error as Error).message;
    const described = error instanceof RegistryError ? message : `client-registry: ${message}`;
    const { now, random, retry: policy } = c;
    apply(c, item, {
      type: 'NoteCredentialsUnavailable',
      error: described,
      nowMs: now(),
      random: random(),
      policy,
    });
    c.logger.warn({ botId: lane.botId, err: error }, "could not read the bot's credentials; will retry");
    return false;
  }
}

/** The call, its answer weighed by the delivery rules; the bot's flood count and pause follow the answer. */
async function call(
  c: AttemptContext,
  lane: Lane,
  item: Item,
  bot: BotCredentials | undefined,
): Promise<void> {
  const result: AttemptResult<CleanText> = bot
    ? await send(c, lane, bot, item)
    : cleanAnswer({ kind: 'unauthorized', description: 'the bot is no longer registered' });
  c.metrics.attempts.inc({ result: result.kind });
  const facts = { nowMs: c.now(), botFloods: lane.floods, random: c.random(), policy: c.retry };
  const [event] = apply(c, item, { type: 'RecordAnswer', result, ...facts, unconfirmed: c.unconfirmed });
  if (result.kind === 'rate-limited') {
    lane.floods++;
    c.metrics.floods.inc();
    c.logger.warn({ botId: lane.botId, retryAfterMs: result.retryAfterMs }, 'flood control: the bot waits');
  } else if (result.kind === 'sent') lane.floods = 0;
  if (event?.type !== 'RetryPlanned') return;
  if (event.pauseBotUntilMs) lane.schedule.pauseUntil(event.pauseBotUntilMs);
  if (event.failed)
    c.logger.info(
      { messageId: item.messageId, botId: lane.botId, error: event.error },
      'send failed; will retry',
    );
}

/** One turn of a queued message: what its state says is next, each journal or provider answer decided on. */
async function turn(c: AttemptContext, lane: Lane, item: Item): Promise<void> {
  if (item.state.due) return writeDue(c, item);
  if (c.now() > item.state.deadlineMs) {
    // Its deadline passed while it waited (for a retry after failures, or its turn): no call at all.
    if (!(await claim(c, lane, item))) return;
    if (!item.state.due) apply(c, item, { type: 'Expire', nowMs: c.now() });
    return writeDue(c, item);
  }
  // The credentials first: a lookup that fails leaves no claim, so nothing is reported unconfirmed.
  const bot = await credentials(c, lane, item);
  if (bot === false || !(await claim(c, lane, item))) return;
  // Expired while it was claimed: decided with no call.
  if (item.state.due) return writeDue(c, item);
  const giveUpAt = claimLife(c);
  await call(c, lane, item, bot);
  await writeDue(c, item, giveUpAt);
}
