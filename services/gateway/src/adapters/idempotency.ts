import { randomUUID } from 'node:crypto';
import type { Knex } from '@mds/db';
import type { RequestFingerprint } from '../application/fingerprint.js';
import type { Claim, Completion, Holder, IdempotencyStore, KeyToClaim } from '../application/ports.js';

const LOCK_SECONDS = 30;

/**
 * Idempotency-Key, shared by every replica through PostgreSQL: scoped to the API key, remembered for the TTL
 * with a fingerprint of the request. The first request claims the key (with the event id it will publish);
 * a repeat gets the stored response, a different body 422, a concurrent duplicate 409. A claim whose holder
 * died is taken over after 30 s, with the same event id, so a retry never makes a second message.
 */
export function createIdempotencyStore(o: { db: Knex; ttlHours: number }): IdempotencyStore {
  const where = (apiKeyId: string, key: string) => ({ api_key_id: apiKeyId, idempotency_key: key });
  /** What a claim reads of a held key. */
  const heldColumns = () => [
    'idempotency_key',
    'fingerprint',
    'event_id',
    'state',
    'status_code',
    'response',
    o.db.raw(`created_at < now() - interval '${o.ttlHours} hours' as expired`),
    o.db.raw('locked_until < now() as lock_expired'),
  ];

  const store: IdempotencyStore = {
    async claim(
      apiKeyId: string,
      key: string,
      fingerprint: RequestFingerprint,
      newEventId: string,
    ): Promise<Claim> {
      for (let attempt = 0; attempt < 2; attempt++) {
        const token = randomUUID();
        const inserted = await o
          .db('idempotency_keys')
          .insert({
            ...where(apiKeyId, key),
            fingerprint: fingerprint.value,
            event_id: newEventId,
            claim_token: token,
            state: 'pending',
            locked_until: o.db.raw(`now() + interval '${LOCK_SECONDS} seconds'`),
            created_at: o.db.fn.now(),
          })
          .onConflict(['api_key_id', 'idempotency_key'])
          .ignore()
          .returning('event_id');
        if (inserted.length > 0) return { kind: 'new', eventId: newEventId, token, takenOver: false };

        const row = await o
          .db('idempotency_keys')
          .where(where(apiKeyId, key))
          .first<HeldKey | undefined>(heldColumns());
        if (!row) continue;
        if (row.expired) {
          await o.db('idempotency_keys').where(where(apiKeyId, key)).delete();
          continue;
        }
        const held = answerOfHeld(row, fingerprint);
        if (held) return held;
        // Its holder died or its publish had an unknown outcome: take it over, keeping the event id.
        const taken = await o
          .db('idempotency_keys')
          .where(where(apiKeyId, key))
          .andWhere((q) => q.where('state', 'unknown').orWhere('locked_until', '<', o.db.fn.now()))
          .update({
            state: 'pending',
            claim_token: token,
            locked_until: o.db.raw(`now() + interval '${LOCK_SECONDS} seconds'`),
          })
          .returning('event_id');
        return taken.length > 0
          ? { kind: 'new', eventId: row.event_id, token, takenOver: true }
          : { kind: 'in_flight' };
      }
      return { kind: 'in_flight' };
    },

    async claimMany(apiKeyId: string, claims: readonly KeyToClaim[]): Promise<Claim[]> {
      if (claims.length === 0) return [];
      const tokens = claims.map(() => randomUUID());
      // ON CONFLICT DO NOTHING also skips the later of two rows with one key in the same statement.
      const { rows } = await o.db.raw<{ rows: { claim_token: string }[] }>(
        `insert into idempotency_keys
           (api_key_id, idempotency_key, fingerprint, event_id, claim_token, state, locked_until, created_at)
         select ?, v.key, v.fingerprint, v.event_id, v.token, 'pending',
                now() + interval '${LOCK_SECONDS} seconds', now()
         from unnest(?::text[], ?::text[], ?::uuid[], ?::uuid[]) with ordinality as v(key, fingerprint, event_id, token, n)
         order by v.n
         on conflict (api_key_id, idempotency_key) do nothing
         returning claim_token`,
        [
          apiKeyId,
          claims.map((c) => c.key),
          claims.map((c) => c.fingerprint.value),
          claims.map((c) => c.newEventId),
          tokens,
        ],
      );
      const inserted = new Set(rows.map((r) => r.claim_token));
      const others = claims.filter((_, i) => !inserted.has(tokens[i]!)).map((c) => c.key);
      // The keys held already (a retried batch, mostly): read by one statement, answered from what they hold;
      // one that has lapsed or is to be taken over is claimed as a single request's.
      const held = new Map(
        others.length === 0
          ? []
          : (
              await o
                .db('idempotency_keys')
                .where('api_key_id', apiKeyId)
                .whereIn('idempotency_key', others)
                .select<HeldKey[]>(heldColumns())
            ).map((row) => [row.idempotency_key, row]),
      );
      return Promise.all(
        claims.map((c, i) => {
          if (inserted.has(tokens[i]!))
            return Promise.resolve<Claim>({
              kind: 'new',
              eventId: c.newEventId,
              token: tokens[i]!,
              takenOver: false,
            });
          const row = held.get(c.key);
          const answer = row && !row.expired ? answerOfHeld(row, c.fingerprint) : undefined;
          return answer ? Promise.resolve(answer) : store.claim(apiKeyId, c.key, c.fingerprint, c.newEventId);
        }),
      );
    },

    async completeMany(apiKeyId: string, completions: readonly Completion[]): Promise<void> {
      if (completions.length === 0) return;
      await o.db.raw(
        `update idempotency_keys k set state = 'done', status_code = v.status_code, response = v.response
         from unnest(?::text[], ?::uuid[], ?::smallint[], ?::jsonb[]) as v(key, token, status_code, response)
         where k.api_key_id = ? and k.idempotency_key = v.key and k.claim_token = v.token`,
        [
          completions.map((c) => c.key),
          completions.map((c) => c.holder.token),
          completions.map((c) => c.statusCode),
          completions.map((c) => JSON.stringify(c.response)),
          apiKeyId,
        ],
      );
    },

    /** Stores the response, if the claim is still this holder's; false when another took it over. */
    async complete(
      apiKeyId: string,
      key: string,
      holder: Holder,
      statusCode: number,
      response: unknown,
    ): Promise<boolean> {
      const updated = await o
        .db('idempotency_keys')
        .where({ ...where(apiKeyId, key), claim_token: holder.token })
        .update({ state: 'done', status_code: statusCode, response: JSON.stringify(response) });
      return updated > 0;
    },

    /**
     * The publish failed: `no` (nothing written) frees the key; `unknown` lets the next try reuse the event
     * id. A taken-over claim is never freed: its event id may have been published by the earlier holder
     * (a gateway that died after publishing), and a new id would make the same request a second message.
     * Only the claim's holder does either: a holder whose claim lapsed and was taken over changes nothing.
     */
    async release(apiKeyId: string, key: string, written: 'no' | 'unknown', holder: Holder): Promise<void> {
      const mine = o.db('idempotency_keys').where({ ...where(apiKeyId, key), claim_token: holder.token });
      if (written === 'no' && !holder.takenOver) await mine.delete();
      else await mine.update({ state: 'unknown' });
    },

    async removeExpired(): Promise<number> {
      return o
        .db('idempotency_keys')
        .where('created_at', '<', o.db.raw(`now() - interval '${o.ttlHours} hours'`))
        .delete();
    },
  };
  return store;
}

interface HeldKey {
  idempotency_key: string;
  fingerprint: string;
  event_id: string;
  state: string;
  status_code: number;
  response: unknown;
  expired: boolean;
  lock_expired: boolean;
}

/** A held, unexpired key's answer to a claim; undefined when its claim is to be taken over. */
function answerOfHeld(row: HeldKey, fingerprint: RequestFingerprint): Claim | undefined {
  if (!fingerprint.matches(row.fingerprint)) return { kind: 'mismatch' };
  if (row.state === 'done') return { kind: 'replay', statusCode: row.status_code, response: row.response };
  if (row.state === 'pending' && !row.lock_expired) return { kind: 'in_flight' };
  return undefined;
}
