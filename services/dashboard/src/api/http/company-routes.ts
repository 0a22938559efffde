import { randomUUID } from 'node:crypto';
import express, { type Router } from 'express';
import { z } from 'zod';
import { messengerNameSchema, messengers } from '@mds/contracts';
import { redactedUrl } from '@mds/logging';
import { normalizeApiPhone } from '@mds/contracts/phone';
import { parseOr422, Problem } from '@mds/service-kit';
import { botActivity, overviewOf } from '../../adapters/db/queries.js';
import { can } from '../../domain/roles.js';
import { companyContext, idParam, type CompanyContext } from './company-context.js';
import type { ApiDeps } from './deps.js';
import { alreadyAudited } from './audit-guard.js';
import { endpointRoutes } from './endpoint-routes.js';
import { keyRoutes } from './key-routes.js';
import { memberWith } from './session.js';

const botName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, "_" and "-", at most 64');
const button = z.strictObject({ text: z.string().min(1).max(64), url: z.string().min(1).max(2048) });

const schemas = {
  webhook: z.strictObject({ url: z.url({ protocol: /^https?$/, message: 'an http(s) URL' }).max(2048) }),
  bot: z.strictObject({
    messenger: messengerNameSchema(),
    name: botName,
    token: z.string().trim().min(1).max(512),
    default: z.boolean().default(false),
  }),
  send: z.strictObject({
    idempotency_key: z.string().min(1).max(255).optional(),
    phone_number: z.string().min(1).max(40),
    service: messengerNameSchema(),
    // The gateway holds each messenger to its own limit; here, no text longer than the longest of the catalogue.
    text: z
      .string()
      .min(1)
      .superRefine((text, ctx) => {
        const maximum = Math.max(...messengers().map((m) => m.textLimit));
        if (text.length > maximum)
          ctx.addIssue({ code: 'too_big', origin: 'string', maximum, inclusive: true, input: text });
      }),
    bot_name: botName.optional(),
    buttons: z.array(button).max(10).optional(),
    // Its range is the gateway's to check.
    ttl_seconds: z.int().optional(),
    // The gateway holds metadata to its rules (keys, sizes, characters) and says which one failed.
    metadata: z.record(z.string(), z.string()).optional(),
    // Its form and range are the gateway's to check.
    send_at: z.string().optional(),
    // How many and whether one repeats an earlier channel are the gateway's to check (its stable codes).
    fallback: z
      .array(z.strictObject({ service: messengerNameSchema(), bot_name: botName.optional() }))
      .optional(),
  }),
  changePhone: z.strictObject({
    idempotency_key: z.string().min(1).max(255).optional(),
    old_phone: z.string().min(1).max(40),
    new_phone: z.string().min(1).max(40),
  }),
};

/** The company's overview over a range of hours. */
function overviewRoutes(router: Router, d: ApiDeps): void {
  router.get('/overview', async (req, res) => {
    const m = memberWith(res, 'read');
    const hours = { '1h': 1, '24h': 24, '7d': 168 }[
      typeof req.query.range === 'string' ? req.query.range : '24h'
    ];
    if (!hours) throw new Problem(422, 'invalid_range', 'Invalid range', 'range is 1h, 24h or 7d.');
    const now = d.now();
    const until = new Date(Math.ceil((now.getTime() + 1) / 60_000) * 60_000);
    res.json(await overviewOf(d.db, m.company_id, new Date(until.getTime() - hours * 3_600_000), until));
  });
}

/** The webhook endpoint and its signing secrets. */
function webhookRoutes(router: Router, d: ApiDeps, c: CompanyContext): void {
  const { company, path, audit } = c;
  // The webhook endpoint and its signing secrets.
  router.get('/webhook', async (_req, res) => {
    const m = memberWith(res, 'read');
    const { webhook } = await company(m);
    // Its query may hold the receiver's token: only those who may change the endpoint see it.
    res.json({
      webhook:
        webhook && !can(m.role, 'manage-webhook') ? { ...webhook, url: redactedUrl(webhook.url) } : webhook,
    });
  });
  router.put('/webhook', async (req, res) => {
    const m = memberWith(res, 'manage-webhook');
    const body = parseOr422(schemas.webhook, req.body);
    const webhook = await d.registry(m).call('PUT', path(m, '/webhook'), body);
    await audit(m, 'webhook.url', '', { url: redactedUrl(body.url) });
    res.json({ webhook });
  });
  for (const action of ['enable', 'disable'] as const) {
    router.post(`/webhook/${action}`, async (_req, res) => {
      const m = memberWith(res, 'manage-webhook');
      const webhook = await d.registry(m).call('POST', path(m, `/webhook/${action}`));
      await audit(m, `webhook.${action}`);
      res.json({ webhook });
    });
  }
  router.post('/webhook/secrets', async (_req, res) => {
    const m = memberWith(res, 'reveal-secrets');
    const secrets = await d.registry(m).call('GET', path(m, '/webhook/secrets'));
    await audit(m, 'webhook.secrets_revealed');
    res.json(secrets);
  });
  router.post('/webhook/rotate', async (_req, res) => {
    const m = memberWith(res, 'manage-webhook');
    const rotated = await d.registry(m).call('POST', path(m, '/webhook/rotate-secret'));
    await audit(m, 'webhook.secret_rotated');
    res.json(rotated);
  });
  router.post('/webhook/test', async (_req, res) => {
    const m = memberWith(res, 'manage-webhook');
    const tested = await d.dispatcher(m).call('POST', path(m, '/test-event'));
    await audit(m, 'webhook.test_sent');
    res.json(tested);
  });
}

/** Bots, with what the log says of each: the last update from a person, and the last hour's sends. */
function botRoutes(router: Router, d: ApiDeps, c: CompanyContext): void {
  const { company, path, audit } = c;
  // Bots, with what the log says of each: the last update from a person, and the last hour's sends.
  router.get('/bots', async (_req, res) => {
    const m = memberWith(res, 'read');
    const now = d.now();
    const hourAgo = new Date(now.getTime() - 3_600_000);
    const [view, activity, hour] = await Promise.all([
      company(m),
      botActivity(d.db, m.company_id),
      overviewOf(d.db, m.company_id, hourAgo, new Date(now.getTime() + 60_000)),
    ]);
    res.json({
      bots: view.bots.map((b) => {
        const counts = hour.bots.find((x) => x.bot_id === b.bot_id);
        return {
          ...b,
          last_update_at: activity.get(b.bot_id)?.at ?? null,
          last_update_type: activity.get(b.bot_id)?.type ?? null,
          last_hour: {
            sent: counts?.sent ?? 0,
            failed: counts?.failed ?? 0,
            rate_limited: counts?.rate_limited ?? 0,
          },
        };
      }),
    });
  });
  router.post('/bots', async (req, res) => {
    const m = memberWith(res, 'manage-bots');
    const body = parseOr422(schemas.bot, req.body);
    const bot = await d.registry(m).call<{ bot_id: string }>('POST', path(m, '/bots'), body);
    await audit(m, 'bot.added', bot.bot_id, { messenger: body.messenger, name: body.name });
    res.status(201).json(bot);
  });
  router.delete('/bots/:botId', async (req, res) => {
    const m = memberWith(res, 'manage-bots');
    const botId = idParam(req, 'botId', 'bot_not_found');
    await d.registry(m).call('DELETE', path(m, `/bots/${botId}`));
    await audit(m, 'bot.removed', botId);
    res.status(204).end();
  });
  router.put('/bots/:botId/default', async (req, res) => {
    const m = memberWith(res, 'manage-bots');
    const botId = idParam(req, 'botId', 'bot_not_found');
    const bot = await d.registry(m).call('PUT', path(m, `/bots/${botId}/default`));
    await audit(m, 'bot.default', botId);
    res.json(bot);
  });
  // A check asks the messenger with the bot's token: those who manage bots, not viewers.
  router.post('/bots/:botId/check', async (req, res) => {
    const m = memberWith(res, 'manage-bots');
    const botId = idParam(req, 'botId', 'bot_not_found');
    const checked = await d.registry(m).call('POST', path(m, `/bots/${botId}/check`));
    await audit(m, 'bot.checked', botId);
    res.json(checked);
  });
}

/** Accepted now, not the replay of an earlier acceptance (a double click): one row in the audit trail each. */
function firstAcceptance(answer: { status: number; headers: Headers }): boolean {
  const replayed = answer.headers.get('idempotent-replayed') === 'true';
  if (replayed) alreadyAudited();
  return answer.status === 202 && !replayed;
}

/** Clients: a number's links; a number changed, and messages sent, through the public API as the member. */
function clientRoutes(router: Router, d: ApiDeps, c: CompanyContext): void {
  const { path, audit, throughGateway } = c;
  // Clients: a number's links; a number changed through the public API as the member.
  router.get('/clients/:phone', async (req, res) => {
    const m = memberWith(res, 'read');
    const phone = normalizeApiPhone(String(req.params.phone));
    if (!phone.ok) throw new Problem(422, 'invalid_phone_number', 'Invalid phone number', phone.detail);
    res.json(await d.registry(m).call('GET', path(m, `/clients/${phone.phone}`)));
  });
  router.post('/clients/change-phone', async (req, res) => {
    const m = memberWith(res, 'change-phone');
    const { idempotency_key, ...change } = parseOr422(schemas.changePhone, req.body);
    const answer = await throughGateway(m, '/change_phone', change, idempotency_key ?? randomUUID());
    if (firstAcceptance(answer)) await audit(m, 'client.change_phone', String(answer.body.event_id));
    res.status(answer.status).json(answer.body);
  });

  router.post('/send', async (req, res) => {
    const m = memberWith(res, 'send');
    const { idempotency_key, ...message } = parseOr422(schemas.send, req.body);
    const answer = await throughGateway(m, '/send', message, idempotency_key ?? randomUUID());
    if (firstAcceptance(answer)) await audit(m, 'message.sent', String(answer.body.event_id));
    res.status(answer.status).json(answer.body);
  });
}

/** Keys, webhook, bots, clients and sending: client-registry, webhook-dispatcher and the gateway, for the member's company only. */
export function companyRouter(d: ApiDeps): Router {
  const router = express.Router();
  const context = companyContext(d);
  overviewRoutes(router, d);
  keyRoutes(router, d, context);
  webhookRoutes(router, d, context);
  endpointRoutes(router, d, context);
  botRoutes(router, d, context);
  clientRoutes(router, d, context);
  return router;
}
