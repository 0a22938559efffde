// The Telegram Bot API subset: https://api.telegram.org/bot<token>/<method>, GET or POST, parameters
// in the query string, JSON, form-encoded or multipart bodies; the HTTP status equals error_code.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { SimulatorContext } from '../context.js';
import { tg, tgError, type TelegramResult } from '../domain/telegram/errors.js';
import { readPollRequest } from '../domain/telegram/get-updates.js';
import { getMeResult } from '../domain/telegram/objects.js';
import type { Params } from '../domain/telegram/params.js';
import { sendMessage } from '../domain/telegram/send-message.js';
import { deleteWebhook, setWebhook, webhookInfo } from '../domain/telegram/webhook.js';
import type { TelegramBot } from '../domain/types.js';
import { TELEGRAM_TOKEN_SHAPE } from '../domain/world.js';
import { BodyTooLarge, readTelegramParams } from '../http/body.js';
import { actOutFault, hostileErrorOf } from '../http/faults.js';
import { replyBytes, replyJson } from '../http/reply.js';
import { LongPolls } from './long-poll.js';

type Method = (
  bot: TelegramBot,
  params: Params,
  res: Response,
) => Promise<TelegramResult<unknown> | undefined> | TelegramResult<unknown>;

function reply(res: Response, body: TelegramResult<unknown>): void {
  replyJson(res, body.ok ? 200 : body.error_code, body);
}

export function telegramRouter(ctx: SimulatorContext): express.Router {
  const polls = new LongPolls(ctx);
  const webhookRules = { requireHttps: ctx.config.WEBHOOK_REQUIRE_HTTPS };
  const sendContext = { world: ctx.world, limiter: ctx.limiter, limits: ctx.telegramLimits };

  /** Method names as the Bot API spells them; calls match them in any case. */
  const methods = new Map<string, [string, Method]>(
    (
      [
        ['getMe', (bot) => ({ ok: true, result: getMeResult(bot) })],
        ['sendMessage', (bot, params) => sendMessage(sendContext, bot, params)],
        [
          'getUpdates',
          (bot, params, res) => {
            if (bot.webhook) return tg.webhookActive();
            const request = readPollRequest(params);
            return 'ok' in request ? request : polls.poll(bot, request, res);
          },
        ],
        [
          'setWebhook',
          (bot, params) => {
            const result = setWebhook(bot, params, webhookRules);
            if (result.ok) {
              polls.endFor(bot.id, 'webhook');
              ctx.pusher.kick(bot);
            }
            return result;
          },
        ],
        ['deleteWebhook', (bot, params) => deleteWebhook(bot, params)],
        ['getWebhookInfo', (bot) => ({ ok: true, result: webhookInfo(bot) })],
      ] satisfies [string, Method][]
    ).map(([name, fn]) => [name.toLowerCase(), [name, fn]]),
  );

  const router = express.Router();
  router.all('/bot:token/:method', async (req: Request<{ token: string; method: string }>, res) => {
    const { token } = req.params;
    if (!TELEGRAM_TOKEN_SHAPE.test(token)) return reply(res, tg.notFound());
    const bot = ctx.world.botByToken(token);
    if (!bot || bot.messenger !== 'telegram') return reply(res, tg.unauthorized());
    const known = methods.get(req.params.method.toLowerCase());
    if (!known) return reply(res, tg.notFound());
    const [name, method] = known;

    let params: Params;
    try {
      params = await readTelegramParams(req);
    } catch (error) {
      if (error instanceof BodyTooLarge) return reply(res, tgError(413, 'Request Entity Too Large'));
      throw error;
    }
    let answer: TelegramResult<unknown> | undefined;
    let hostile: ReturnType<typeof hostileErrorOf> | undefined;
    const fault = ctx.faults.take('telegram', token, name);
    const faulted =
      fault !== undefined &&
      (await actOutFault(fault, res, ctx.timers, {
        serverError: (status) => (answer = tg.internal(status ?? 500)),
        tooManyRequests: (retryAfter) => (answer = tg.tooManyRequests(retryAfter)),
        hostileError: (f) => (hostile = hostileErrorOf('telegram', f)),
      }));
    if (!faulted) answer = await method(bot, params, res);
    if (answer) reply(res, answer);
    else if (hostile) replyBytes(res, hostile.status, hostile.body);
    const status = answer ? (answer.ok ? 200 : answer.error_code) : (hostile?.status ?? 0);
    ctx.metrics.apiCalls.inc({ messenger: 'telegram', method: name, status: String(status) });
    ctx.requests.add({
      at: ctx.world.deps.now(),
      messenger: 'telegram',
      botId: bot.id,
      method: name,
      params,
      status,
      error: answer && !answer.ok ? answer.description : hostile?.summary,
    });
  });
  // A path under /bot that is no token and method at all.
  router.all('/bot{*rest}', (_req, res) => reply(res, tg.notFound()));
  router.use('/bot{*rest}', (error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    ctx.logger.error({ err: error }, 'telegram call failed');
    if (!res.headersSent) reply(res, tg.internal());
  });
  return router;
}
