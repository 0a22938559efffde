import { RegistryError } from '@mds/registry-client';
import { inHop, SpanKind } from '@mds/telemetry';
import type { CleanText } from '@mds/contracts';
import { backoffMs, nextStep, type AttemptResult } from '../../domain/attempt.js';
import { cleanAnswer } from '../../domain/outside-text.js';
import type { Item, Lane } from '../lanes.js';
import type { BotCredentials } from '../provider.js';
import { claim } from './claim.js';
import { claimLife, type AttemptContext } from './context.js';
import { decide, giveBack, pastDeadline } from './record.js';
import { send } from './send.js';

export type { AttemptContext } from './context.js';
export { settleOrphan } from './record.js';

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
export async function turn(c: AttemptContext, lane: Lane, item: Item): Promise<void> {
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
  const result: AttemptResult<CleanText> = bot
    ? await send(c, lane, bot, item)
    : cleanAnswer({ kind: 'unauthorized', description: 'the bot is no longer registered' });
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
