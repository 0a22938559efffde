import type { Logger } from '@mds/logging';
import { shouldDisableEndpoint } from '../domain/schedule.js';
import {
  endpointKey,
  type Completion,
  type DeliveryStore,
  type EndpointDirectory,
  type EndpointKey,
} from './ports.js';

/** How long an endpoint's clock read from the database is trusted before it is written (and read) again. */
const TRUSTED_MS = 60_000;

/** What one batch of results says of an endpoint: a success in it, the first failure after the last one. */
interface Seen extends EndpointKey {
  reset: boolean;
  since: Date | null;
  failed: boolean;
  at: Date;
}

/** Per endpoint, from its results in order; and the endpoints that answered 410 Gone, with why. */
function seenIn(stored: readonly Completion[]): {
  seen: Map<string, Seen>;
  gone: Map<string, { endpoint: EndpointKey; reason: string }>;
} {
  const seen = new Map<string, Seen>();
  const gone = new Map<string, { endpoint: EndpointKey; reason: string }>();
  for (const c of stored) {
    const key = endpointKey(c.claim);
    const endpoint = { companyId: c.claim.companyId, endpointId: c.claim.endpointId };
    if (c.attempt?.outcome === 'gone')
      gone.set(key, { endpoint, reason: `${c.attempt.error} from ${c.attempt.url}` });
    if (!c.health) continue;
    const s = seen.get(key) ?? {
      ...endpoint,
      reset: false,
      since: null,
      failed: false,
      at: c.health.at,
    };
    if (c.health.succeeded) Object.assign(s, { reset: true, since: null });
    else s.since ??= c.health.at;
    s.failed = !c.health.succeeded;
    s.at = c.health.at;
    seen.set(key, s);
  }
  return { seen, gone };
}

export interface FailureClockOptions {
  store: Pick<DeliveryStore, 'moveFailureClocks'>;
  directory: Pick<EndpointDirectory, 'disable'>;
  logger: Logger;
  now: () => Date;
  disableAfterMs: number;
  onDisabled?: (why: 'gone' | 'failing') => void;
}

/** Disables an endpoint in the registry; a failure to is logged (the next failure asks again). */
async function disable(
  o: FailureClockOptions,
  endpoint: EndpointKey,
  reason: string,
  why: 'gone' | 'failing',
): Promise<void> {
  try {
    // Counted once per endpoint: a later batch asks again while the registry already has it disabled.
    if (await o.directory.disable(endpoint, reason)) o.onDisabled?.(why);
    o.logger.warn({ ...endpoint, reason }, 'disabled a webhook endpoint');
  } catch (error) {
    o.logger.error({ err: error, ...endpoint }, 'could not disable a webhook endpoint');
  }
}

/**
 * Each endpoint's failure clock (since when every attempt to it has failed), kept in the database across
 * replicas and written only when it changes: the first failure after a success starts it, a success stops it.
 * An endpoint answering 410, or failing for `disableAfterMs`, is disabled in the registry; the company's other
 * endpoints are not touched.
 */
export function createFailureClocks(o: FailureClockOptions) {
  const known = new Map<string, { since: Date | null; readAt: number }>();

  /** The clocks of these endpoints as the database has them now, written where they changed. */
  async function move(seen: Map<string, Seen>): Promise<void> {
    const clock = Date.now();
    const changes = [...seen]
      .filter(([key, s]) => {
        const k = known.get(key);
        if (!k || clock - k.readAt > TRUSTED_MS) return true;
        const next = s.reset ? s.since : (k.since ?? s.since);
        return next?.getTime() !== k.since?.getTime();
      })
      .map(([, s]) => s);
    try {
      for (const [key, since] of await o.store.moveFailureClocks(changes))
        known.set(key, { since, readAt: clock });
    } catch (error) {
      // Clocks stay as they were: the next result of these endpoints writes them.
      for (const c of changes) known.delete(endpointKey(c));
      o.logger.warn({ err: error }, 'could not move endpoint failure clocks');
    }
  }

  return {
    /** Moves the clocks of the endpoints these results are about, and disables what must be. */
    async record(stored: readonly Completion[]): Promise<void> {
      const { seen, gone } = seenIn(stored);
      await move(seen);
      const at = o.now();
      for (const { endpoint, reason } of gone.values()) await disable(o, endpoint, reason, 'gone');
      for (const [key, s] of seen) {
        const since = known.get(key)?.since ?? null;
        if (s.failed && !gone.has(key) && since && shouldDisableEndpoint(since, at, o.disableAfterMs))
          await disable(
            o,
            { companyId: s.companyId, endpointId: s.endpointId },
            `every attempt failed since ${since.toISOString()}`,
            'failing',
          );
      }
    },
  };
}
