import type { Request, Router } from 'express';
import { z } from 'zod';
import { API_KEY_SCOPES, API_REQUEST_LOG_DAYS } from '@mds/contracts';
import { parseOr422, Problem, refuseInvalidCharacters } from '@mds/service-kit';
import { apiRequestsOf } from '../../adapters/db/api-requests-store.js';
import { keyUsage } from '../../adapters/db/queries.js';
import { decodeCursor } from '../../domain/cursor.js';
import { idParam, type CompanyContext, type CompanyView } from './company-context.js';
import type { ApiDeps } from './deps.js';
import { memberWith } from './session.js';

/** A key as the registry lists it, with what rolling added (when it stops, what it was rolled from). */
type KeyOfCompany = CompanyView['api_keys'][number] & {
  scopes?: string[];
  expires_at?: string | null;
  rolled_from?: string | null;
};

/** A key as the registry answers when it issues or rolls one: the key itself is in it, shown this once. */
interface NewKey {
  key_id: string;
  api_key: string;
  prefix: string;
  label: string;
  scopes: string[];
  rolled_from?: string;
  old_key_expires_at?: string;
}

/** The overlaps the keys page offers; the registry takes any from 0 to 7 days. */
export const ROLL_OVERLAP_SECONDS = [0, 3_600, 86_400, 604_800] as const;

const schemas = {
  // Scopes as the registry takes them; unset, its default (every scope but change_phone).
  key: z.strictObject({
    label: z.string().superRefine(refuseInvalidCharacters).trim().min(1).max(100),
    scopes: z.array(z.enum(API_KEY_SCOPES)).min(1).optional(),
  }),
  roll: z.strictObject({
    expires_in_seconds: z
      .number()
      .int()
      .refine((s) => (ROLL_OVERLAP_SECONDS as readonly number[]).includes(s), {
        message: `one of ${ROLL_OVERLAP_SECONDS.join(', ')} (now, 1 hour, 24 hours, 7 days)`,
      }),
  }),
  requests: z.strictObject({
    cursor: z
      .string()
      .max(100)
      .refine((c) => decodeCursor(c) !== undefined, 'a cursor from a previous page')
      .optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  }),
};

const shownOnce = (key: NewKey) => ({
  key_id: key.key_id,
  api_key: key.api_key,
  prefix: key.prefix,
  label: key.label,
  scopes: key.scopes,
});

/**
 * API keys: shown once when made (or rolled), then by prefix and label, with who made them here, when each was
 * last used and the requests it made (the request log, kept API_REQUEST_LOG_DAYS days).
 */
export function keyRoutes(router: Router, d: ApiDeps, c: CompanyContext): void {
  const { company, path, audit } = c;
  const keysOf = async (m: Parameters<typeof company>[0]) => (await company(m)).api_keys as KeyOfCompany[];
  /** The company's key named in the path (404 `api_key_not_found` for any other). */
  const ownKey = async (req: Request, m: Parameters<typeof company>[0]) => {
    const keyId = idParam(req, 'keyId', 'api_key_not_found');
    const key = (await keysOf(m)).find((k) => k.key_id === keyId);
    if (!key)
      throw new Problem(404, 'api_key_not_found', 'Not found', `No API key ${keyId} in this company.`);
    return key;
  };

  router.get('/keys', async (_req, res) => {
    const m = memberWith(res, 'read');
    const [keys, usage, creators] = await Promise.all([
      keysOf(m),
      keyUsage(d.db, m.company_id),
      d.access.keyCreators(m.company_id),
    ]);
    res.json({
      keys: keys
        .map((k) => ({
          ...k,
          expires_at: k.expires_at ?? null,
          rolled_from: k.rolled_from ?? null,
          last_used_at: usage.get(k.key_id) ?? null,
          created_by: creators.get(k.key_id) ?? null,
        }))
        .sort((a, b) => (a.issued_at < b.issued_at ? 1 : -1)),
      request_log_days: API_REQUEST_LOG_DAYS,
    });
  });

  router.post('/keys', async (req, res) => {
    const m = memberWith(res, 'manage-keys');
    const body = parseOr422(schemas.key, req.body);
    const key = await d.registry(m).call<NewKey>('POST', path(m, '/api-keys'), {
      label: body.label,
      ...(body.scopes ? { scopes: body.scopes } : {}),
    });
    await audit(m, 'api_key.created', key.key_id);
    res.status(201).json(shownOnce(key));
  });

  router.post('/keys/:keyId/roll', async (req, res) => {
    const m = memberWith(res, 'manage-keys');
    const keyId = idParam(req, 'keyId', 'api_key_not_found');
    const body = parseOr422(schemas.roll, req.body);
    const key = await d.registry(m).call<NewKey>('POST', path(m, `/api-keys/${keyId}/roll`), body);
    // The new key is what the member made here: "created by" them, like a key they issued.
    await audit(m, 'api_key.created', key.key_id, { rolled_from: keyId });
    await audit(m, 'api_key.rolled', keyId, {
      new_key_id: key.key_id,
      old_key_expires_at: key.old_key_expires_at,
    });
    res.status(201).json({
      ...shownOnce(key),
      rolled_from: keyId,
      old_key_expires_at: key.old_key_expires_at ?? null,
    });
  });

  router.delete('/keys/:keyId', async (req, res) => {
    const m = memberWith(res, 'manage-keys');
    const keyId = idParam(req, 'keyId', 'api_key_not_found');
    await d.registry(m).call('DELETE', path(m, `/api-keys/${keyId}`));
    await audit(m, 'api_key.revoked', keyId);
    res.status(204).end();
  });

  router.get('/keys/:keyId/requests', async (req, res) => {
    const m = memberWith(res, 'read');
    const key = await ownKey(req, m);
    const q = parseOr422(
      schemas.requests,
      Object.fromEntries(Object.entries(req.query).filter(([, v]) => v !== '')),
    );
    const page = await apiRequestsOf(d.db, {
      companyId: m.company_id,
      keyId: key.key_id,
      limit: q.limit,
      ...(q.cursor ? { cursor: q.cursor } : {}),
    });
    res.json({
      key: { key_id: key.key_id, prefix: key.prefix, label: key.label, revoked_at: key.revoked_at },
      requests: page.requests,
      next_cursor: page.nextCursor,
      retention_days: API_REQUEST_LOG_DAYS,
    });
  });
}
