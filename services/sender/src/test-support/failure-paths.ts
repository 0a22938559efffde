// Every way a sender's calls to its messenger can fail, acted out against the messenger simulator's
// faults, a closed port and a hostile server, with every log line the sender writes kept: the tests of both
// senders check that no line (and no outcome event) carries a bot token or a webhook secret.
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { topics, type BotChat, type Complete, type MessageEvent, deliveryTopic } from '@mds/contracts';
import { createLogger, type Logger } from '@mds/logging';
import { freePort } from '@mds/local-infra';
import { eventually } from '@mds/local-infra/testing';
import {
  deliveryRequest,
  outcomesOf,
  publishDeliveries,
  chatOfStart,
  startSenderStack,
  type ActionAnswer,
  type BuiltInMessengerName,
  type SenderStack,
  type SimBot,
} from './stack.js';

export interface FailurePathsOptions {
  messenger: BuiltInMessengerName;
  /** Runs the sender under test with this environment (the stack's and the run's settings), logging to `logger`. */
  start(env: Record<string, string>, logger: Logger): Promise<{ url: string; stop: () => Promise<void> }>;
}

export interface FailurePathsResult {
  /** Every line the sender logged, at trace level, across all the runs. */
  lines: string[];
  /** Every outcome event of the messages sent, as JSON. */
  outcomes: string[];
  /** What must appear in none of them: the bots' tokens (and the secret half of a Telegram one), webhook secrets. */
  secrets: string[];
  /** The error codes and failure kinds the outcomes came to, to show the paths were taken. */
  outcomeCodes: string[];
}

const WEBHOOK_SECRET = 'updates-webhook-secret-for-the-log-test';

const METHODS = {
  telegram: { send: 'sendMessage', poll: 'getUpdates', subscribe: 'setWebhook' },
  max: { send: 'messages', poll: 'updates', subscribe: 'subscriptions' },
} as const;

/**
 * A server no messenger should be: `garbage` answers 200 with HTML; `echo` answers 502 with an error that
 * quotes the request back (its URL, where grammY puts the token, and its Authorization header, where the
 * MAX SDK does), as a careless proxy might.
 */
async function hostileServer(): Promise<{
  url: string;
  mode: { value: 'garbage' | 'echo' };
  close(): Promise<void>;
}> {
  const mode = { value: 'garbage' as 'garbage' | 'echo' };
  const server: Server = createServer((req, res) => {
    req.resume();
    if (mode.value === 'garbage') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>not the API</body></html>');
      return;
    }
    const echoed = `bad gateway for ${req.url} (authorization ${req.headers.authorization ?? 'none'})`;
    res.writeHead(502, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        ok: false,
        error_code: 502,
        description: echoed,
        code: 'proxy.error',
        message: echoed,
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    mode,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A logger at trace level whose every line is kept in `lines`. */
export function capturingLogger(lines: string[]): Logger {
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return createLogger({ service: 'sender-under-test', level: 'trace', destination });
}

/**
 * What the runs showed: `untaken` names the failure paths that left no trace (the run proved nothing about
 * them), `leaks` every log line and outcome event that carries a secret. Both are empty when all is well.
 */
export function leaksAndUntakenPaths(result: FailurePathsResult): { untaken: string[]; leaks: string[] } {
  const logged = (text: string) => result.lines.some((l) => l.includes(text));
  const untaken = [
    ...['could not set the updates webhook', 'reading updates failed', '"kind":"unauthorized"']
      .filter((text) => !logged(text))
      .map((text) => `no log line with ${text}`),
    ...['messageSent', 'BOT_BLOCKED_BY_USER', 'BOT_MISCONFIGURED', 'DELIVERY_UNCONFIRMED']
      .filter((code) => !result.outcomeCodes.includes(code))
      .map((code) => `no outcome ${code}`),
  ];
  const leaks = [...result.lines, ...result.outcomes].filter((text) =>
    result.secrets.some((secret) => text.includes(secret)),
  );
  return { untaken, leaks };
}

export async function runEveryFailurePath(o: FailurePathsOptions): Promise<FailurePathsResult> {
  const methods = METHODS[o.messenger];
  const deliveryTopicSpec = deliveryTopic(o.messenger);
  const stack: SenderStack = await startSenderStack();
  const messages = await stack.collect(topics.message);
  const hostile = await hostileServer();
  const lines: string[] = [];
  const logger = capturingLogger(lines);
  const sent: string[] = [];
  try {
    // `faulty` meets the simulator's faults and is deleted at the end (401); `steady` stays for the rest.
    const faulty = await stack.createBot(o.messenger, 'faulty');
    const steady = await stack.createBot(o.messenger, 'steady');

    const chatWith = async (bot: SimBot): Promise<{ chat: BotChat; personId: number }> => {
      const person = await stack.createPerson();
      const started = await stack.control<ActionAnswer>('POST', `/people/${person.id}/actions`, {
        action: 'start',
        bot_id: bot.simId,
      });
      return { chat: chatOfStart(o.messenger, bot, person, started), personId: person.id };
    };
    const send = async (chat: BotChat, deadlineMs: number) => {
      const [id] = await publishDeliveries(stack, deliveryTopicSpec, [
        deliveryRequest(stack.companyId, chat, { deadlineMs }),
      ]);
      sent.push(id!);
      return id!;
    };
    const outcome = (id: string) =>
      eventually(`outcome of ${id}`, () => outcomesOf(messages.events, [id])[0], 30_000);
    const fault = (bot: SimBot, body: Record<string, unknown>) =>
      stack.control('POST', '/faults', { bot_id: bot.simId, ...body });
    const faultsSpent = () =>
      eventually(
        'the faults are spent',
        async () =>
          (await stack.control<{ faults: unknown[] }>('GET', '/faults')).faults.length === 0
            ? true
            : undefined,
        30_000,
      );
    const logged = (text: string, from: number) =>
      eventually(
        `a log line with "${text}"`,
        () => (lines.slice(from).some((l) => l.includes(text)) ? true : undefined),
        30_000,
      );
    const run = async (env: Record<string, string>, body: () => Promise<void>) => {
      const sender = await o.start(
        { ...stack.senderEnv, SEND_TIMEOUT_MS: '1000', RETRY_BASE_MS: '100', RETRY_MAX_MS: '500', ...env },
        logger,
      );
      try {
        await body();
      } finally {
        await sender.stop();
      }
    };

    // The simulator, polling: 5xx and 429 then sent; a timeout and a drop after delivery (unconfirmed); a
    // block (403); failing polls (5xx, 429, timeout); finally a deleted bot (401 on sends and polls).
    await run({}, async () => {
      const { chat } = await chatWith(faulty);
      await fault(faulty, { kind: '5xx', method: methods.send });
      await fault(faulty, { kind: '429', method: methods.send, retry_after: 1 });
      await outcome(await send(chat, 30_000));
      await fault(faulty, { kind: 'timeout', method: methods.send, ms: 2_500 });
      await outcome(await send(chat, 30_000));
      await fault(faulty, { kind: 'drop-after-delivery', method: methods.send });
      await outcome(await send(chat, 30_000));
      await fault(faulty, { kind: '5xx', method: methods.poll });
      await fault(faulty, { kind: '429', method: methods.poll, retry_after: 1 });
      await fault(faulty, { kind: 'timeout', method: methods.poll, ms: 1_500 });
      await faultsSpent();
      const blocked = await chatWith(faulty);
      await stack.control('POST', `/people/${blocked.personId}/actions`, {
        action: 'block',
        bot_id: faulty.simId,
      });
      await outcome(await send(blocked.chat, 30_000));
      const from = lines.length;
      await stack.control('DELETE', `/bots/${faulty.simId}`);
      await outcome(await send(chat, 30_000));
      await logged('"kind":"unauthorized"', from);
    });

    const steadyChat = (await chatWith(steady)).chat;
    const dead = `http://127.0.0.1:${await freePort()}`;
    const apiRoot = (url: string) => ({ MESSENGER_API_BASE: url });

    // Nothing listening: refused connections on sends and polls.
    await run(apiRoot(dead), async () => {
      const from = lines.length;
      await outcome(await send(steadyChat, 4_000));
      await logged('reading updates failed', from);
    });

    // A server answering HTML, then one quoting the request (token and all) in its error.
    await run(apiRoot(hostile.url), async () => {
      hostile.mode.value = 'garbage';
      let from = lines.length;
      await outcome(await send(steadyChat, 4_000));
      await logged('reading updates failed', from);
      hostile.mode.value = 'echo';
      from = lines.length;
      await outcome(await send(steadyChat, 4_000));
      await logged('reading updates failed', from);
    });

    // Webhook mode: setting the webhook fails against nothing, the hostile server, and the simulator's faults.
    const webhookMode = async (url: string) => {
      const port = await freePort();
      return {
        ...apiRoot(url),
        HTTP_PORT: String(port),
        UPDATES_MODE: 'webhook',
        UPDATES_PUBLIC_URL: `http://127.0.0.1:${port}`,
        UPDATES_WEBHOOK_SECRET: WEBHOOK_SECRET,
      };
    };
    for (const [url, modes] of [
      [dead, ['garbage']],
      [hostile.url, ['garbage', 'echo']],
    ] as const) {
      await run(await webhookMode(url), async () => {
        for (const m of modes) {
          hostile.mode.value = m;
          await logged('could not set the updates webhook', lines.length);
        }
      });
    }
    await fault(steady, { kind: '5xx', method: methods.subscribe });
    await fault(steady, { kind: '429', method: methods.subscribe, retry_after: 1 });
    await run(await webhookMode(stack.simulator.url), async () => {
      await faultsSpent();
      await logged('updates webhook set', 0);
    });

    const hmac = (botId: string) => createHmac('sha256', WEBHOOK_SECRET).update(botId).digest('base64url');
    const secrets = [faulty.token, steady.token, WEBHOOK_SECRET, hmac(faulty.botId), hmac(steady.botId)];
    // A Telegram token is `<bot id>:<secret>`: the secret half must not appear either.
    for (const token of [faulty.token, steady.token]) {
      const half = token.split(':')[1];
      if (half) secrets.push(half);
    }
    const outcomes = outcomesOf(messages.events, sent);
    return {
      lines,
      outcomes: outcomes.map((e) => JSON.stringify(e)),
      secrets,
      outcomeCodes: outcomes.map((e: Complete<MessageEvent>) =>
        e.event.$case === 'messageDeliveryFailed' ? e.event.value.errorCode : e.event.$case,
      ),
    };
  } finally {
    await hostile.close();
    await messages.stop();
    await stack.stop();
  }
}
