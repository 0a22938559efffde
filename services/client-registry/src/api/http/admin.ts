import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { effectiveScopes } from '@mds/contracts';
import type { Knex } from '@mds/db';
import { DomainError } from '@mds/eventsourcing';
import { normalizeApiPhone } from '@mds/contracts/phone';
import { adminCallers, companyScope, jsonBody, operatorOnly, parseOr422, Problem } from '@mds/service-kit';
import type { KeyObject } from 'node:crypto';
import { TokenCheckError, type Accounts } from '../../application/accounts.js';
import { resealAllSecrets } from '../../application/reseal.js';
import type { AccountState, BotRecord } from '../../domain/accounts.js';
import { listAccounts, loadAccount } from '../../adapters/db/accounts-store.js';
import { linksOfPhoneSince } from '../../adapters/db/links-store.js';
import { adminOpenApiDocument } from './openapi.js';
import { adminRequestSchemas } from './request-schemas.js';
import { endpointView, legacyWebhookView, webhookEndpointRoutes, webhookRoutes } from './webhook-routes.js';
import type { Forgetting } from '../../application/forget.js';

const DOMAIN_STATUS: Record<string, number> = {
  COMPANY_NOT_FOUND: 404,
  API_KEY_NOT_FOUND: 404,
  API_KEY_ENDED: 409,
  BOT_NOT_FOUND: 404,
  WEBHOOK_NOT_CONFIGURED: 409,
  WEBHOOK_ENDPOINT_NOT_FOUND: 404,
  WEBHOOK_ENDPOINT_LIMIT: 409,
  WEBHOOK_ENDPOINT_EXISTS: 409,
  BOT_NAME_TAKEN: 409,
  BOT_ALREADY_REGISTERED: 409,
  COMPANY_EXISTS: 409,
  INVALID_NAME: 422,
};

const uuid = z.uuid();

const botView = (b: BotRecord, state: AccountState) => ({
  bot_id: b.botId,
  messenger: b.messenger,
  name: b.name,
  username: b.username,
  default: state.defaultBots[b.messenger] === b.botId,
  registered_at: b.registeredAt,
});

/** Never a secret: keys by prefix, secrets by id. */
export function companyView(state: AccountState) {
  return {
    company_id: state.companyId,
    name: state.name,
    created_at: state.createdAt,
    api_keys: Object.values(state.apiKeys).map((k) => ({
      key_id: k.keyId,
      prefix: k.keyPrefix,
      label: k.label,
      scopes: effectiveScopes(k.scopes ?? []),
      issued_at: k.issuedAt,
      revoked_at: k.revokedAt ?? null,
      expires_at: k.expiresAt ?? null,
      rolled_from: k.rolledFrom ?? null,
    })),
    // ep_default (the single URL of older versions), as before endpoints; every endpoint below.
    webhook: legacyWebhookView(state),
    webhook_endpoints: state.webhookEndpoints.map((e) => endpointView(e)),
    bots: Object.values(state.bots).map((b) => botView(b, state)),
  };
}

export interface AdminDeps {
  db: Knex;
  accounts: Accounts;
  forgetting: Forgetting;
  /** Seals the people's keys again under the current encryption key (part of a reseal). */
  resealPersonKeys: () => Promise<number>;
  adminToken: string;
  /** Keys verifying the dashboard's assertions (it acts for one company at a time); none: operator only. */
  dashboardKeys: readonly KeyObject[];
}

/** The company named in the path, and its stored account (404 when there is none). */
function companyLookups(o: AdminDeps) {
  const companyId = (req: Request) => {
    const id = uuid.safeParse(req.params.companyId);
    if (!id.success)
      throw new Problem(
        404,
        'company_not_found',
        'Company not found',
        `No company ${String(req.params.companyId)}.`,
      );
    return id.data;
  };
  const account = async (req: Request) => {
    const state = await loadAccount(o.db, companyId(req));
    if (!state)
      throw new Problem(404, 'company_not_found', 'Company not found', `No company ${companyId(req)}.`);
    return state;
  };

  return { companyId, account };
}

export type Lookups = ReturnType<typeof companyLookups>;

/** POST /keys/reseal. */
function resealRoute(router: Router, o: AdminDeps): void {
  // Seals every stored secret again under the current encryption key (see deploy/README.md, "Rotating the
  // encryption key"): 200 with what it did, or a 500 problem `reseal_incomplete` naming the companies it
  // could not finish (their secrets are under a key the registry no longer has).
  router.post('/keys/reseal', operatorOnly, async (_req, res) => {
    const report = await resealAllSecrets(o.accounts, o.resealPersonKeys);
    const done = {
      key_id: report.keyId,
      companies: report.companies,
      bot_tokens: report.botTokens,
      webhook_secrets: report.webhookSecrets,
      person_keys: report.personKeys,
      failed: report.failed.map((f) => ({ company_id: f.companyId, error: f.error })),
    };
    if (report.failed.length > 0) {
      const which = report.failed.map((f) => `${f.companyId} (${f.error})`).join(', ');
      throw new Problem(
        500,
        'reseal_incomplete',
        'Reseal incomplete',
        `${report.failed.length} companies could not be resealed under ${report.keyId}: ${which}. Keep the old keys until they are.`,
        undefined,
        {},
        done,
      );
    }
    res.json(done);
  });
}

/** Companies and their API keys. */
function companyRoutes(router: Router, o: AdminDeps, { companyId, account }: Lookups): void {
  router.post('/companies', operatorOnly, async (req, res) => {
    const body = parseOr422(adminRequestSchemas.company, req.body);
    res.status(201).json(companyView(await o.accounts.createCompany(body.name)));
  });
  router.get('/companies', operatorOnly, async (_req, res) => {
    res.json({
      companies: (await listAccounts(o.db)).map((s) => ({
        company_id: s.companyId,
        name: s.name,
        created_at: s.createdAt,
      })),
    });
  });
  router.get('/companies/:companyId', async (req, res) => {
    res.json(companyView(await account(req)));
  });

  router.post('/companies/:companyId/api-keys', async (req, res) => {
    const body = parseOr422(adminRequestSchemas.apiKey, req.body ?? {});
    const key = await o.accounts.issueApiKey(companyId(req), body.label, body.scopes);
    res.status(201).json({
      key_id: key.keyId,
      api_key: key.apiKey,
      prefix: key.keyPrefix,
      label: key.label,
      scopes: key.scopes,
      note: 'the key is shown once',
    });
  });
  router.post('/companies/:companyId/api-keys/:keyId/roll', async (req, res) => {
    const body = parseOr422(adminRequestSchemas.rollApiKey, req.body ?? {});
    const { key, old } = await o.accounts.rollApiKey(
      companyId(req),
      String(req.params.keyId),
      body.expires_in_seconds,
    );
    res.status(201).json({
      key_id: key.keyId,
      api_key: key.apiKey,
      prefix: key.keyPrefix,
      label: key.label,
      scopes: effectiveScopes(key.scopes ?? []),
      rolled_from: old.keyId,
      old_key_expires_at: old.expiresAt ?? old.revokedAt ?? null,
      note: 'the key is shown once',
    });
  });
  router.delete('/companies/:companyId/api-keys/:keyId', async (req, res) => {
    await o.accounts.revokeApiKey(companyId(req), String(req.params.keyId));
    res.status(204).end();
  });
}

/** A company's bots. */
function botRoutes(router: Router, o: AdminDeps, { companyId, account }: Lookups): void {
  router.post('/companies/:companyId/bots', async (req, res) => {
    const body = parseOr422(adminRequestSchemas.bot, req.body);
    const { bot, isDefault } = await o.accounts.registerBot(companyId(req), {
      messenger: body.messenger,
      name: body.name,
      token: body.token,
      makeDefault: body.default,
    });
    res.status(201).json({ ...botView(bot, await account(req)), default: isDefault });
  });
  router.get('/companies/:companyId/bots', async (req, res) => {
    const state = await account(req);
    res.json({ bots: Object.values(state.bots).map((b) => botView(b, state)) });
  });
  router.delete('/companies/:companyId/bots/:botId', async (req, res) => {
    await o.accounts.removeBot(companyId(req), String(req.params.botId));
    res.status(204).end();
  });
  router.put('/companies/:companyId/bots/:botId/default', async (req, res) => {
    const state = await o.accounts.chooseDefaultBot(companyId(req), String(req.params.botId));
    res.json(botView(state.bots[String(req.params.botId)]!, state));
  });

  // Asks the messenger whether the bot's token still works (getMe / GET /me), without changing anything.
  router.post('/companies/:companyId/bots/:botId/check', async (req, res) => {
    const state = await account(req);
    const bot = state.bots[String(req.params.botId)];
    if (!bot) throw new Problem(404, 'bot_not_found', 'Bot not found', `No bot ${String(req.params.botId)}.`);
    const check = await o.accounts.checkBot(state, bot.botId);
    res.json(
      check.ok
        ? { bot_id: bot.botId, ok: true, username: check.bot.username, checked_at: new Date().toISOString() }
        : {
            bot_id: bot.botId,
            ok: false,
            reason: check.reason,
            detail: check.detail,
            checked_at: new Date().toISOString(),
          },
    );
  });
}

/** A company's clients: their links, and forgetting one. */
function clientRoutes(router: Router, o: AdminDeps, { account }: Lookups): void {
  router.get('/companies/:companyId/clients/:phone', async (req, res) => {
    const state = await account(req);
    const phone = normalizeApiPhone(String(req.params.phone));
    if (!phone.ok) throw new Problem(422, 'invalid_phone_number', 'Invalid phone number', phone.detail);
    const links = await linksOfPhoneSince(o.db, state.companyId, phone.phone);
    res.json({
      phone_number: phone.phone,
      exists: links.length > 0,
      links: links.map((l) => ({
        messenger: state.bots[l.chat.botId]?.messenger ?? null,
        bot_id: l.chat.botId,
        bot_name: state.bots[l.chat.botId]?.name ?? null,
        chat_id: l.chat.chatId,
        reachable: l.reachable,
        unreachable_reason: l.unreachableReason,
        since: l.since,
      })),
    });
  });

  // Erasure of one person (docs/personal-data.md): keys destroyed, links removed, ClientForgotten announced.
  router.post('/companies/:companyId/clients/:phone/forget', operatorOnly, async (req, res) => {
    const state = await account(req);
    const phone = normalizeApiPhone(String(req.params.phone));
    if (!phone.ok) throw new Problem(422, 'invalid_phone_number', 'Invalid phone number', phone.detail);
    const forgotten = await o.forgetting.forget(state.companyId, phone.phone);
    res.json({
      subject_id: forgotten.subjectId,
      subject_ids: forgotten.subjectIds,
      numbers_forgotten: forgotten.subjectIds.length,
      keys_destroyed: forgotten.keysDestroyed,
      links_removed: forgotten.linksRemoved,
    });
  });
}

/** Domain refusals and token checks as problems with their codes. */
function domainProblems(error: unknown, _req: Request, _res: Response, next: NextFunction): void {
  if (error instanceof DomainError) {
    return next(
      new Problem(
        DOMAIN_STATUS[error.code] ?? 422,
        error.code.toLowerCase(),
        error.code.replaceAll('_', ' ').toLowerCase(),
        error.message,
      ),
    );
  }
  if (error instanceof TokenCheckError) {
    return next(
      error.reason === 'rejected'
        ? new Problem(422, 'invalid_bot_token', 'Invalid bot token', error.message, [
            { pointer: '#/token', detail: error.message },
          ])
        : new Problem(502, 'messenger_unreachable', 'Messenger unreachable', error.message),
    );
  }
  next(error);
}

/** The admin API (what the spec calls the dashboard): companies, keys, webhook endpoint, bots, clients. */
export function adminRouter(o: AdminDeps): Router {
  const router = express.Router();
  // The API's own description is public: it holds no data.
  const document = adminOpenApiDocument();
  router.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  // The operator may do everything; the dashboard, one company's routine operations (not the operatorOnly ones).
  router.use(
    adminCallers({
      operatorToken: o.adminToken,
      operatorSetting: 'REGISTRY_ADMIN_TOKEN',
      audience: 'client-registry',
      dashboardKeys: o.dashboardKeys,
    }),
  );
  router.param('companyId', companyScope);
  router.use(jsonBody({ limit: '64kb' }));

  const lookups = companyLookups(o);
  resealRoute(router, o);
  companyRoutes(router, o, lookups);
  webhookRoutes(router, o, lookups);
  webhookEndpointRoutes(router, o, lookups);
  botRoutes(router, o, lookups);
  clientRoutes(router, o, lookups);
  router.use(domainProblems);
  return router;
}
