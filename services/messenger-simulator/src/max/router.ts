// The MAX Bot API subset at the root of the base URL: GET /me, POST /messages, GET /updates and
// POST/GET/DELETE /subscriptions. The token is the raw `Authorization` header; a query token is ignored.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { SimulatorContext } from '../context.js';
import { mx, ok, type MaxResult } from '../domain/max/errors.js';
import { botInfo } from '../domain/max/objects.js';
import { sendMessage, type Query } from '../domain/max/send-message.js';
import { listSubscriptions, readPollRequest, subscribe, unsubscribe } from '../domain/max/updates-api.js';
import type { MaxBot } from '../domain/types.js';
import { BodyTooLarge, INVALID_JSON, queryParams, readJsonBody } from '../http/body.js';
import { actOutFault, hostileErrorOf } from '../http/faults.js';
import { replyBytes, replyJson } from '../http/reply.js';
import { pollMax } from './long-poll.js';

interface MaxCall {
  bot: MaxBot;
  query: Query;
  body: unknown;
  res: Response;
}

type Handler = (call: MaxCall) => Promise<MaxResult<unknown> | undefined> | MaxResult<unknown>;

function reply(res: Response, result: MaxResult<unknown>): void {
  replyJson(res, result.status, result.body);
}

export function maxRouter(ctx: SimulatorContext): express.Router {
  const requireHttps = ctx.config.WEBHOOK_REQUIRE_HTTPS;
  const router = express.Router();

  /** Authentication, faults, the per-bot rate limit, then the endpoint. */
  const endpoint = (path: string, handler: Handler) => async (req: Request, res: Response) => {
    const token = req.headers.authorization;
    const bot = token ? ctx.world.botByToken(token) : undefined;
    if (!token || !bot || bot.messenger !== 'max') return reply(res, mx.badToken());
    const query = queryParams(req.url);
    let body: unknown;
    try {
      body = req.method === 'POST' ? await readJsonBody(req) : undefined;
    } catch (error) {
      if (error instanceof BodyTooLarge) return reply(res, mx.payload('Request body is too large'));
      throw error;
    }
    const name = `${req.method} /${path}`;
    let answer: MaxResult<unknown> | undefined;
    let hostile: ReturnType<typeof hostileErrorOf> | undefined;
    const fault = ctx.faults.take('max', token, path);
    const faulted =
      fault !== undefined &&
      (await actOutFault(fault, res, ctx.timers, {
        serverError: (status) => (answer = mx.internal(status ?? 503)),
        tooManyRequests: () => (answer = mx.tooManyRequests()),
        hostileError: (f) => (hostile = hostileErrorOf('max', f)),
      }));
    if (!faulted) {
      const waitMs = ctx.limiter.take(ctx.world.deps.now(), [
        { key: `max:bot:${bot.id}`, spec: ctx.maxLimit },
      ]);
      if (waitMs > 0) answer = mx.tooManyRequests();
      else if (body === INVALID_JSON) answer = mx.payload('Request body is not valid JSON');
      else answer = await handler({ bot, query, body, res });
    }
    if (answer) reply(res, answer);
    else if (hostile) replyBytes(res, hostile.status, hostile.body);
    const status = answer?.status ?? hostile?.status ?? 0;
    ctx.metrics.apiCalls.inc({ messenger: 'max', method: name, status: String(status) });
    ctx.requests.add({
      at: ctx.world.deps.now(),
      messenger: 'max',
      botId: bot.id,
      method: name,
      params: { query, body: body === INVALID_JSON ? null : body },
      status,
      error:
        answer && answer.status !== 200 ? (answer.body as { message: string }).message : hostile?.summary,
    });
  };

  router.get(
    '/me',
    endpoint('me', ({ bot }) => ok(botInfo(bot, ctx.world.deps.now()))),
  );
  router.post(
    '/messages',
    endpoint('messages', ({ bot, query, body }) => sendMessage(ctx.world, bot, query, body)),
  );
  router.get(
    '/updates',
    endpoint('updates', ({ bot, query, res }) => {
      const request = readPollRequest(query);
      return 'body' in request ? request : pollMax(ctx, bot, request, res);
    }),
  );
  router.get(
    '/subscriptions',
    endpoint('subscriptions', ({ bot }) => ok(listSubscriptions(bot))),
  );
  router.post(
    '/subscriptions',
    endpoint('subscriptions', ({ bot, body }) => {
      const result = subscribe(bot, body, ctx.world.deps.now(), requireHttps);
      if (result.status === 200) ctx.pusher.kick(bot);
      return result;
    }),
  );
  router.delete(
    '/subscriptions',
    endpoint('subscriptions', ({ bot, query }) => unsubscribe(bot, query.url)),
  );
  router.all(['/me', '/messages', '/updates', '/subscriptions'], (req, res) =>
    reply(res, mx.methodNotAllowed(req.method)),
  );
  router.use(
    ['/me', '/messages', '/updates', '/subscriptions'],
    (error: unknown, _req: Request, res: Response, _next: NextFunction) => {
      ctx.logger.error({ err: error }, 'MAX call failed');
      if (!res.headersSent) reply(res, mx.internal(500));
    },
  );
  return router;
}
