import {
  derivedEventId,
  FALLBACK_ERROR_CODES,
  type ChannelAttempt,
  type FallbackRoute,
  type MessageErrorCode,
} from '@mds/contracts';

/**
 * The journal key of one channel of a message: the message id for its own channel (channel 0, every row
 * written before fallback existed), an id derived from it for a fallback channel, so that each channel's
 * decision is kept apart (its own row, compare-and-set) while the journal's key stays a UUID. Only the
 * journal and derived event ids use it: what is published stays keyed and streamed by the message id.
 */
export const journalKey = (messageId: string, route: FallbackRoute | undefined): string =>
  route && route.channel > 0 ? derivedEventId(messageId, `channel/${route.channel}`) : messageId;

/** How a channel's failure ends: the message passes on to its next channel, or ends here. */
export type ChannelEnd =
  { kind: 'next'; route: FallbackRoute } | { kind: 'final'; fallback: FallbackRoute | undefined };

/**
 * A failure with a code that means "not reachable there" passes a message on to its next channel, if it has
 * one left; anything else (an uncertain call, an expiry, a cancel, a provider error...) ends it, naming the
 * channel that decided it and those tried before (a message without a fallback names none). So does any
 * failure after an earlier call on this channel that may have reached the person (with UNCONFIRMED_SENDS=retry
 * an unanswered call is retried, and a later "blocked" says nothing of whether the first one arrived): the
 * message is then never sent on another channel, where the person would get it twice.
 */
export function channelEnd(
  route: FallbackRoute | undefined,
  failureCode: string | undefined,
  earlierCallMayHaveReached = false,
): ChannelEnd {
  if (
    route &&
    failureCode !== undefined &&
    !earlierCallMayHaveReached &&
    route.next.length > 0 &&
    FALLBACK_ERROR_CODES.has(failureCode as MessageErrorCode)
  )
    return { kind: 'next', route };
  return { kind: 'final', fallback: decidingRoute(route) };
}

/** The route an outcome names: the channel that decided the message, and those tried before it. */
export const decidingRoute = (route: FallbackRoute | undefined): FallbackRoute | undefined =>
  route && { ...route, next: [] };

/** The failed channel as the next one's `tried` names it. */
export function attemptOf(
  route: FallbackRoute,
  failure: { botId: string; errorCode: string; errorDescription: string; failedAt: Date },
): ChannelAttempt {
  return {
    messenger: route.current?.messenger ?? 0,
    botName: route.current?.botName ?? '',
    ...failure,
  };
}
