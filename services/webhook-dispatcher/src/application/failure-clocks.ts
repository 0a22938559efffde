import type { Logger } from '@mds/logging';
import { shouldDisableEndpoint } from '../domain/schedule.js';
import type { Completion, DeliveryStore, EndpointDirectory } from './ports.js';

/** How long a company's clock read from the database is trusted before it is written (and read) again. */
const TRUSTED_MS = 60_000;

/**
 * Each endpoint's failure clock (since when every attempt has failed), kept in the database across replicas
 * and written only when it changes: the first failure after a success starts it, a success stops it. An
 * endpoint answering 410, or failing for `disableAfterMs`, is disabled in the registry.
 */
export function createFailureClocks(o: {
  store: Pick<DeliveryStore, 'moveFailureClocks'>;
  directory: Pick<EndpointDirectory, 'disable'>;
  logger: Logger;
  now: () => Date;
  disableAfterMs: number;
  onDisabled?: (why: 'gone' | 'failing') => void;
}) {
  const known = new Map<string, { since: Date | null; readAt: number }>();

  async function disable(companyId: string, reason: string, why: 'gone' | 'failing'): Promise<void> {
    try {
      // Counted once per endpoint: a later batch asks again while the registry already has it disabled.
      if (await o.directory.disable(companyId, reason)) o.onDisabled?.(why);
      o.logger.warn({ companyId, reason }, 'disabled a webhook endpoint');
    } catch (error) {
      // The next failure asks again.
      o.logger.error({ err: error, companyId }, 'could not disable a webhook endpoint');
    }
  }

  return {
    /** Moves the clocks of the companies these results are about, and disables what must be. */
    async record(stored: readonly Completion[]): Promise<void> {
      // Per company, from its results in order: was there a success, and the first failure after the last one.
      const seen = new Map<string, { reset: boolean; since: Date | null; failed: boolean; at: Date }>();
      const gone = new Map<string, string>();
      for (const c of stored) {
        if (c.attempt?.outcome === 'gone')
          gone.set(c.claim.companyId, `${c.attempt.error} from ${c.attempt.url}`);
        if (!c.health) continue;
        const s = seen.get(c.claim.companyId) ?? {
          reset: false,
          since: null,
          failed: false,
          at: c.health.at,
        };
        if (c.health.succeeded) Object.assign(s, { reset: true, since: null });
        else s.since ??= c.health.at;
        s.failed = !c.health.succeeded;
        s.at = c.health.at;
        seen.set(c.claim.companyId, s);
      }
      const clock = Date.now();
      const changes = [...seen]
        .filter(([companyId, s]) => {
          const k = known.get(companyId);
          if (!k || clock - k.readAt > TRUSTED_MS) return true;
          const next = s.reset ? s.since : (k.since ?? s.since);
          return next?.getTime() !== k.since?.getTime();
        })
        .map(([companyId, s]) => ({ companyId, reset: s.reset, since: s.since, at: s.at }));
      try {
        for (const [companyId, since] of await o.store.moveFailureClocks(changes))
          known.set(companyId, { since, readAt: clock });
      } catch (error) {
        // Clocks stay as they were: the next result of these companies writes them.
        for (const c of changes) known.delete(c.companyId);
        o.logger.warn({ err: error }, 'could not move endpoint failure clocks');
      }
      const at = o.now();
      for (const [companyId, reason] of gone) await disable(companyId, reason, 'gone');
      for (const [companyId, { failed }] of seen) {
        const since = known.get(companyId)?.since ?? null;
        if (failed && !gone.has(companyId) && since && shouldDisableEndpoint(since, at, o.disableAfterMs))
          await disable(companyId, `every attempt failed since ${since.toISOString()}`, 'failing');
      }
    },
  };
}
