import type { ChannelAttempt, FallbackRoute } from './gen/mds/events/v1/common.js';

/**
 * The route of a message with a fallback after its channel could not reach the person (MessageAttemptFailed):
 * the next channel, what is left after it, and the failed one among those tried. Undefined when none was left,
 * which a sender never passes on (it decides the message's outcome there instead).
 */
export function routeAfter(route: FallbackRoute, attempt: ChannelAttempt): FallbackRoute | undefined {
  const [current, ...next] = route.next;
  if (!current) return undefined;
  return { channel: route.channel + 1, current, next, tried: [...route.tried, attempt] };
}
