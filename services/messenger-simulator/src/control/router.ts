// The control API for tests and the inbox: create bots and people, act as a person, read what a
// person received, script faults, see recent bot API calls, give the webhook inspector its secrets and
// read what it received.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { z } from 'zod';
import type { SimulatorContext } from '../context.js';
import { WorldError } from '../domain/errors.js';
import type { ContactChoice, PersonAction } from '../domain/person-actions.js';
import type { Bot, Person } from '../domain/types.js';
import {
  actionSchema,
  faultSchema,
  inspectorSecretsSchema,
  inspectorWebhooksQuerySchema,
  issues,
  newBotSchema,
  newPersonSchema,
  requestsQuerySchema,
} from './schemas.js';
import { INSPECTOR_NAME } from '../inspector/inspector.js';
import {
  botView,
  deliveryView,
  faultView,
  inspectorView,
  personView,
  receivedView,
  requestView,
} from './views.js';

type ErrorCode = 'invalid_request' | 'not_found' | 'conflict';

function fail(res: Response, status: number, code: ErrorCode, message: string): void {
  res.status(status).json({ error: { code, message } });
}

function worldFail(res: Response, error: WorldError): void {
  const code = error.status === 404 ? 'not_found' : error.status === 409 ? 'conflict' : 'invalid_request';
  fail(res, error.status, code, error.message);
}

function parse<S extends z.ZodType>(schema: S, value: unknown, res: Response): z.infer<S> | undefined {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  fail(res, 400, 'invalid_request', issues(result.error));
  return undefined;
}

type ContactInput = Extract<z.infer<typeof actionSchema>, { action: 'share_contact' }>['contact'];

function contactChoice(contact: ContactInput): ContactChoice {
  if (!contact) return { kind: 'own' };
  return 'person_id' in contact
    ? { kind: 'person', personId: contact.person_id }
    : {
        kind: 'card',
        phone: contact.phone_number,
        firstName: contact.first_name,
        lastName: contact.last_name,
      };
}

/** Looks a bot or a person up by the id in the path, answering 404 when there is none. */
interface Lookups {
  botOr404: (raw: unknown, res: Response) => Bot | undefined;
  personOr404: (raw: unknown, res: Response) => Person | undefined;
}

function lookups({ world }: SimulatorContext): Lookups {
  const botOr404 = (raw: unknown, res: Response) => {
    const bot = world.bots.get(Number(raw));
    if (!bot) fail(res, 404, 'not_found', `no bot ${String(raw)}`);
    return bot;
  };
  const personOr404 = (raw: unknown, res: Response) => {
    const person = world.people.get(Number(raw));
    if (!person) fail(res, 404, 'not_found', `no person ${String(raw)}`);
    return person;
  };
  return { botOr404, personOr404 };
}

export function controlRouter(ctx: SimulatorContext): express.Router {
  const { world } = ctx;
  const router = express.Router();
  // Room for the long names a test of hostile input gives people (newPersonSchema).
  router.use(express.json({ limit: '1mb' }));
  const find = lookups(ctx);
  botRoutes(router, ctx, find);
  peopleRoutes(router, ctx, find);
  faultRoutes(router, ctx, find);
  inspectorRoutes(router, ctx);

  router.post('/reset', (_req, res) => {
    world.reset();
    ctx.inspector.reset();
    ctx.faults.clear();
    ctx.limiter.clear();
    ctx.requests.clear();
    res.status(204).end();
  });

  router.use((_req, res) => fail(res, 404, 'not_found', 'no such control endpoint'));
  router.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = (error as { status?: number }).status;
    if (status === 400 || status === 413) {
      return fail(res, status, 'invalid_request', (error as Error).message);
    }
    ctx.logger.error({ err: error }, 'control call failed');
    res.status(500).json({ error: { code: 'internal', message: 'internal error' } });
  });
  return router;
}

/** The simulator's version, and creating, listing and removing bots. */
function botRoutes(router: express.Router, ctx: SimulatorContext, { botOr404 }: Lookups): void {
  const { world } = ctx;
  router.get('/version', (_req, res) => {
    res.json({ version: world.version });
  });

  router.post('/bots', (req, res) => {
    const input = parse(newBotSchema, req.body, res);
    if (!input) return;
    const bot = world.createBot(input);
    if (bot instanceof WorldError) return worldFail(res, bot);
    res.status(201).json(botView(bot, ctx.publicUrl()));
  });
  router.get('/bots', (_req, res) => {
    res.json({ bots: [...world.bots.values()].map((b) => botView(b, ctx.publicUrl())) });
  });
  router.get('/bots/:id', (req, res) => {
    const bot = botOr404(req.params.id, res);
    if (bot) res.json(botView(bot, ctx.publicUrl()));
  });
  router.delete('/bots/:id', (req, res) => {
    const bot = botOr404(req.params.id, res);
    if (!bot) return;
    world.removeBot(bot);
    res.status(204).end();
  });
}

/** Creating and reading people, acting as one, and what one received. */
function peopleRoutes(
  router: express.Router,
  ctx: SimulatorContext,
  { botOr404, personOr404 }: Lookups,
): void {
  const { world } = ctx;
  router.post('/people', (req, res) => {
    const input = parse(newPersonSchema, req.body, res);
    if (!input) return;
    const person = world.createPerson({
      phone: input.phone_number,
      firstName: input.first_name,
      lastName: input.last_name,
      username: input.username,
      languageCode: input.language_code,
    });
    if (person instanceof WorldError) return worldFail(res, person);
    res.status(201).json(personView(person));
  });
  router.get('/people', (_req, res) => {
    res.json({ people: [...world.people.values()].map(personView) });
  });
  router.get('/people/:id', (req, res) => {
    const person = personOr404(req.params.id, res);
    if (person) res.json(personView(person));
  });

  router.post('/people/:id/actions', (req, res) => {
    const person = personOr404(req.params.id, res);
    if (!person) return;
    const input = parse(actionSchema, req.body, res);
    if (!input) return;
    if (input.action === 'deactivate') {
      world.deactivate(person);
      return void res.json({ updates: [] });
    }
    const bot = botOr404(input.bot_id, res);
    if (!bot) return;
    const action: PersonAction =
      input.action === 'start'
        ? { type: 'start', payload: input.payload }
        : input.action === 'share_contact'
          ? {
              type: 'share_contact',
              contact: contactChoice(input.contact),
              withPlus: input.phone_format === 'plus',
            }
          : input.action === 'send_text'
            ? { type: 'send_text', text: input.text }
            : { type: input.action };
    const outcome = world.act(person, bot, action);
    if (outcome instanceof WorldError) return worldFail(res, outcome);
    for (const update of outcome.updates) {
      const type =
        'update_type' in update ? update.update_type : 'message' in update ? 'message' : 'my_chat_member';
      ctx.metrics.updates.inc({ messenger: bot.messenger, type });
    }
    res.json(outcome);
  });

  router.get('/people/:id/messages', (req, res) => {
    const person = personOr404(req.params.id, res);
    if (!person) return;
    const botId = req.query.bot_id === undefined ? undefined : Number(req.query.bot_id);
    const messages = [...person.chats.values()]
      .filter((chat) => botId === undefined || chat.bot.id === botId)
      .flatMap((chat) =>
        chat.transcript
          .filter((e) => e.from === 'bot')
          .map((e) => ({ at: e.at, view: receivedView(chat, e) })),
      )
      .sort((a, b) => a.at - b.at)
      .map((m) => m.view);
    res.json({ messages });
  });
}

/** Scripted faults of the bot APIs, and the recent calls to them. */
function faultRoutes(router: express.Router, ctx: SimulatorContext, { botOr404 }: Lookups): void {
  router.post('/faults', (req, res) => {
    const input = parse(faultSchema, req.body, res);
    if (!input) return;
    let { token, messenger } = input;
    if (input.bot_id !== undefined) {
      const bot = botOr404(input.bot_id, res);
      if (!bot) return;
      token = bot.token;
      messenger = bot.messenger;
    }
    const fault = ctx.faults.add({
      kind: input.kind,
      token,
      messenger,
      method: input.method,
      count: input.count,
      ms: input.ms,
      status: input.status,
      retryAfter: input.retry_after,
      hostile: input.hostile,
      size: input.size,
    });
    res.status(201).json(faultView(fault));
  });
  router.get('/faults', (_req, res) => {
    res.json({ faults: ctx.faults.list().map(faultView) });
  });
  router.delete('/faults', (_req, res) => {
    ctx.faults.clear();
    res.status(204).end();
  });
  router.delete('/faults/:id', (req, res) => {
    if (!ctx.faults.remove(Number(req.params.id)))
      return fail(res, 404, 'not_found', `no fault ${req.params.id}`);
    res.status(204).end();
  });

  router.get('/requests', (req, res) => {
    const query = parse(requestsQuerySchema, req.query, res);
    if (!query) return;
    res.json({ requests: ctx.requests.list({ botId: query.bot_id, limit: query.limit }).map(requestView) });
  });
}

/** The webhook inspector: its secrets and what it received. */
function inspectorRoutes(router: express.Router, ctx: SimulatorContext): void {
  const inspectorName = (raw: string, res: Response) => {
    if (INSPECTOR_NAME.test(raw)) return raw;
    fail(res, 400, 'invalid_request', `name: 1-64 letters, digits, "_", "." or "-" (got "${raw}")`);
    return undefined;
  };
  const inspectorOf = (name: string) =>
    inspectorView(name, ctx.inspector.secretCount(name), ctx.inspector.latest(name), ctx.publicUrl());
  router.put('/inspector/:name', (req, res) => {
    const name = inspectorName(req.params.name, res);
    if (!name) return;
    const input = parse(inspectorSecretsSchema, req.body, res);
    if (!input) return;
    ctx.inspector.setSecrets(name, input.secrets);
    res.json(inspectorOf(name));
  });
  router.get('/inspector/:name', (req, res) => {
    const name = inspectorName(req.params.name, res);
    if (name) res.json(inspectorOf(name));
  });
  router.get('/inspector/:name/webhooks', (req, res) => {
    const name = inspectorName(req.params.name, res);
    if (!name) return;
    const query = parse(inspectorWebhooksQuerySchema, req.query, res);
    if (!query) return;
    res.json({ webhooks: ctx.inspector.deliveries(name, query.limit).map(deliveryView) });
  });
  router.delete('/inspector/:name/webhooks', (req, res) => {
    const name = inspectorName(req.params.name, res);
    if (!name) return;
    ctx.inspector.clearDeliveries(name);
    res.status(204).end();
  });
}
