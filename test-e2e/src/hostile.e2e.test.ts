import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { launchChromium } from '@mds/testkit/browser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCleanText } from '@mds/contracts';
import { repoRoot } from '@mds/local-infra';
import { eventually } from '@mds/local-infra/testing';
import { HOSTILE_NAME } from '@mds/sender/testing/hostile-answers';
import { everyGroupCaughtUp, logLinesHolding, setAside } from './caught-up.js';
import type { Stack } from './harness.js';
import {
  startDeliveryStack,
  uniquePhone,
  type DemoCompany,
  type Messenger,
  type Sandbox,
  type SimulatedBot,
  type SimulatedPerson,
  type WebhookReceiver,
} from './sandbox.js';

// Hostile bytes through every channel into one running stack (processes, the real broker and database): the
// public API's fields, webhook endpoints that answer NUL, bytes that are no UTF-8, 10 MB, a trickle past the
// dispatcher's timeout or a redirect, a messenger whose errors hold such bytes (the simulator's hostile-error
// fault), people whose names and shared contacts hold them. After each, another company's message reaches the
// read API, its webhook, the dashboard's message log and timeline and `mds-replay export`; every consumer group
// of every service is caught up; nothing is set aside; and at the end no log line holds a number or a text of
// the run. The bounds are generous (a loaded machine); how long each took is printed.

const run = promisify(execFile);
const RUN = randomBytes(4).toString('hex');
const PASSWORD = 'a long passphrase for the dashboard';
/** The product's promise is 30 s; a loaded 2-core machine gets three times that before the test says no. */
const REACH_MS = 90_000;
/** The dispatcher's timeout in this stack, and how long the trickling endpoint keeps its answer going. */
const WEBHOOK_TIMEOUT_MS = 4_000;
const TRICKLE_BYTES = WEBHOOK_TIMEOUT_MS / 1000 + 4;
const REPLAY_BIN = join(repoRoot(), 'packages/replay/bin/mds-replay.js');
const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'hostile');
const byTestId = (page: Page, id: string) => page.locator(`[data-testid="${id}"]`);

/** What no text may hold, and a word of the run to find it by. */
const hostileText = (what: string) =>
  `hostile-${RUN}-${what} nul \u0000 bel \u0007 esc \u001b[31m nel \u0085 nc \ufffe lone \ud800 end`;

/** Every phone number and text the run used: none may reach a log line. */
const phones: string[] = [];
const texts: string[] = [];
const timings: [string, number][] = [];

let stack: Stack;
let sandbox: Sandbox;
let endpoint: HostileEndpoint;
let good: DemoCompany & { webhooks: WebhookReceiver };
let goodDashboard: (path: string) => Promise<Response>;
let goodPeople: Record<Messenger, SimulatedPerson>;
let hostile: DemoCompany;
let hostileBots: Record<Messenger, SimulatedBot>;
let hostilePeople: Record<Messenger, SimulatedPerson>;
let sends = 0;

beforeAll(async () => {
  ({ stack, sandbox } = await startDeliveryStack({
    env: {
      'webhook-dispatcher': {
        WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
        WEBHOOK_RETRY_SCHEDULE_SECONDS: '1,1',
      },
    },
  }));
  endpoint = await new HostileEndpoint().start();
  good = await sandbox.companyWithWebhooks('Steady');
  const session = await sandbox.dashboardSession(good.companyId, PASSWORD);
  goodDashboard = (path) => session.call('GET', path);
  const goodBots = {
    telegram: await sandbox.bot(good.companyId, 'telegram', 'steady-telegram'),
    max: await sandbox.bot(good.companyId, 'max', 'steady-max'),
  };
  goodPeople = {
    telegram: await sandbox.linkedPerson(good.companyId, goodBots.telegram),
    max: await sandbox.linkedPerson(good.companyId, goodBots.max),
  };
  hostile = await sandbox.company('Hostile');
  hostileBots = {
    telegram: await sandbox.bot(hostile.companyId, 'telegram', 'hostile-telegram'),
    max: await sandbox.bot(hostile.companyId, 'max', 'hostile-max'),
  };
  hostilePeople = {
    telegram: await sandbox.linkedPerson(hostile.companyId, hostileBots.telegram),
    max: await sandbox.linkedPerson(hostile.companyId, hostileBots.max),
  };
  phones.push(...[...Object.values(goodPeople), ...Object.values(hostilePeople)].map((p) => p.phone));
}, 300_000);

afterAll(async () => {
  console.log(
    `hostile e2e: from a well-behaved send to its message in every read model and export, per channel:\n${timings
      .map(([what, ms]) => `  ${what}: ${(ms / 1000).toFixed(1)} s`)
      .join('\n')}`,
  );
  await endpoint?.close();
  await sandbox?.close();
  await stack?.stop();
});

/**
 * The well-behaved company sends a message (telegram and max in turn): it is sent, its webhook comes, it is
 * in the dashboard's log and on its timeline, and in `mds-replay export`; then every consumer group is
 * caught up (the dashboard's own freshness included) and nothing is set aside.
 */
async function otherCompanyStillFlows(after: string): Promise<void> {
  const service: Messenger = sends % 2 === 0 ? 'telegram' : 'max';
  const text = `steady-${RUN}-${sends++}`;
  texts.push(text);
  const started = Date.now();
  const eventId = await sandbox.send(good.apiKey, {
    phone_number: goodPeople[service].phone,
    service,
    text,
  });
  expect((await sandbox.finishedState(good.apiKey, eventId, REACH_MS)).state, after).toBe('sent');
  await good.webhooks.waitFor(eventId, REACH_MS);
  await eventually(
    `${after}: ${eventId} in the dashboard's message log and on its timeline`,
    async () => {
      const log = (await (await goodDashboard('/messages?limit=200')).json()) as {
        messages: { message_id: string }[];
      };
      const one = await goodDashboard(`/messages/${eventId}`);
      const found = log.messages.some((m) => m.message_id === eventId) && one.status === 200;
      const page = found
        ? ((await one.json()) as { message: { state: string }; timeline: { type: string }[] })
        : undefined;
      if (page?.message.state === 'sent' && page.timeline.some((e) => e.type === 'MessageSent')) return true;
      await sleep(500);
      return undefined;
    },
    REACH_MS,
  );
  await eventually(`${after}: ${eventId} in mds-replay export`, () => exported(eventId), REACH_MS);
  timings.push([after, Date.now() - started]);
  expect(
    await everyGroupCaughtUp(stack, { dashboard: goodDashboard, timeoutMs: REACH_MS }),
    `${after}: consumer groups behind`,
  ).toEqual([]);
  expect(await setAside(stack.databaseUrl), `${after}: records set aside`).toEqual([]);
}

/** `mds-replay export` of the well-behaved company's messages: whether it holds the message, sent. */
async function exported(eventId: string): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'mds-hostile-export-'));
  try {
    await run(
      process.execPath,
      [
        REPLAY_BIN,
        'export',
        '--out',
        join(dir, 'export'),
        '--streams',
        'message',
        '--company',
        good.companyId,
        '--format',
        'csv',
        '--threads',
        '0',
        '--no-progress',
      ],
      {
        env: {
          ...process.env,
          KAFKA_BROKERS: stack.infra.kafkaBrokers,
          KAFKA_TOPIC_PREFIX: stack.topicPrefix,
        },
      },
    );
    const csv = readFileSync(join(dir, 'export', 'csv', 'messages.csv'), 'utf8');
    if (csv.split('\n').some((line) => line.startsWith(`${eventId},message,${good.companyId},sent,`)))
      return true;
    await sleep(1_000);
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every string in `value` that holds a character no text may hold, by path. */
function unclean(value: unknown, path = ''): string[] {
  if (typeof value === 'string') return isCleanText(value) ? [] : [path];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => unclean(v, `${path}/${k}`));
}

describe('a hostile company sends hostile bytes through every channel; the other company goes on', () => {
  it('the API refuses them in every field (422 invalid_characters with pointers) and bodies that are no UTF-8 (400)', async () => {
    const phone = uniquePhone();
    phones.push(phone);
    const text = hostileText('api');
    texts.push(text);
    const refused = async (path: string, body: unknown, pointers: string[]) => {
      const answer = await sandbox.call<{ code: string; errors: { pointer: string; code: string }[] }>(
        hostile.apiKey,
        path,
        body,
      );
      expect({ path, status: answer.status, code: answer.body.code }).toEqual({
        path,
        status: 422,
        code: 'validation_failed',
      });
      expect(answer.body.errors.filter((e) => e.code === 'invalid_characters').map((e) => e.pointer)).toEqual(
        pointers,
      );
      // The answer names the character and where it is, never the text.
      expect(JSON.stringify(answer.body)).not.toContain(`hostile-${RUN}`);
    };
    await refused('/send', { phone_number: phone, service: 'telegram', text }, ['#/text']);
    await refused('/send', { phone_number: phone, service: 'max', text: `lone \ud800 only ${RUN}` }, [
      '#/text',
    ]);
    await refused(
      '/send',
      {
        phone_number: phone,
        service: 'telegram',
        text,
        bot_name: 'bot\u0000',
        buttons: [{ text: 'tap \u0007', url: 'https://example.com/\u0000' }],
      },
      ['#/text', '#/bot_name', '#/buttons/0/text', '#/buttons/0/url'],
    );
    await refused('/client/check', { phone_number: `${phone}\u0000` }, ['#/phone_number']);
    await refused('/change_phone', { old_phone: `${phone}\u0000`, new_phone: `\ud800${phone}` }, [
      '#/old_phone',
      '#/new_phone',
    ]);

    // Bytes that are no UTF-8 inside a JSON string, and a raw NUL byte in one: 400, not quietly U+FFFD.
    for (const bytes of [Buffer.from([0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80]), Buffer.from([0x00])]) {
      const body = Buffer.concat([
        Buffer.from(`{"phone_number":"${phone}","service":"telegram","text":"hostile-${RUN} `),
        bytes,
        Buffer.from('"}'),
      ]);
      const answer = await fetch(`${sandbox.gatewayUrl}/api/v1/send`, {
        method: 'POST',
        headers: { 'x-api-key': hostile.apiKey, 'content-type': 'application/json' },
        body,
      });
      expect(answer.status).toBe(400);
      expect(((await answer.json()) as { code: string }).code).toBe('malformed_json');
    }
    await otherCompanyStillFlows('the API refused hostile fields');
    // The export's probe can say no: a message nobody sent is not in it.
    expect(await exported(randomUUID())).toBe(false);
  });

  // A company per endpoint: its message to a number nobody linked fails, and the webhook about it goes to an
  // endpoint that answers so, first attempt and retries.
  it.each([
    ['nul', 'NUL and controls in a 500'],
    ['invalid-utf8', 'bytes that are no UTF-8 in a 500'],
    ['huge', '10 MB (of NULs and broken bytes) in a 500'],
    ['trickle', `a 200 whose body trickles at 1 byte/s past the dispatcher's ${WEBHOOK_TIMEOUT_MS} ms`],
    ['redirect', 'a 307 to another server (not followed)'],
  ] as const)('a webhook endpoint answering %s: %s', async (mode, _what) => {
    const company = await sandbox.company(`Hostile ${mode}`, endpoint.urlOf(mode));
    const session = await sandbox.dashboardSession(company.companyId, PASSWORD);
    const dashboard = (path: string) => session.call('GET', path);
    const phone = uniquePhone();
    phones.push(phone);
    const text = `hostile-${RUN}-${mode}`;
    texts.push(text);
    const eventId = await sandbox.send(company.apiKey, { phone_number: phone, service: 'telegram', text });
    expect((await sandbox.finishedState(company.apiKey, eventId, REACH_MS)).state).toBe('failed');
    // The first attempt and a retry: the dispatcher took the hostile answer and went on.
    await eventually(`two attempts at the ${mode} endpoint`, () => endpoint.hits(mode) >= 2, REACH_MS);
    await otherCompanyStillFlows(`a webhook endpoint answered ${mode}`);

    // The hostile company's own timeline holds its attempts, with clean text only.
    const timeline = await eventually(
      `the attempts at the ${mode} endpoint on its timeline`,
      async () => {
        const page = await dashboard(`/messages/${eventId}`);
        const body =
          page.status === 200
            ? ((await page.json()) as { timeline: { type: string; data: Record<string, unknown> }[] })
            : undefined;
        const attempts = body?.timeline.filter((e) => e.type === 'WebhookAttempted') ?? [];
        if (attempts.length >= 2) return attempts;
        await sleep(500);
        return undefined;
      },
      REACH_MS,
    );
    expect(unclean(timeline)).toEqual([]);
    for (const { data } of timeline) {
      expect(data.outcome).not.toBe('succeeded');
      expect(
        typeof data.response_excerpt === 'string' ? data.response_excerpt.length : 0,
      ).toBeLessThanOrEqual(2_048);
    }
    if (mode === 'nul') expect(String(timeline[0]!.data.response_excerpt)).toContain('boom \ufffd');
    if (mode === 'invalid-utf8' || mode === 'huge')
      expect(String(timeline[0]!.data.response_excerpt)).toContain('\ufffd');
    if (mode === 'redirect') {
      expect(timeline.map((e) => e.data.status_code)).toContain(307);
      expect(endpoint.hits('trap')).toBe(0);
    }
    if (mode === 'trickle') expect(timeline[0]!.data.status_code).toBeNull();
  });

  it.each(['controls', 'invalid-utf8', 'huge', 'not-json'] as const)(
    "the messengers answer the hostile company's sends with a hostile error (%s)",
    async (variant) => {
      await Promise.all(
        (['telegram', 'max'] as const).map(async (messenger) => {
          await sandbox.simulator('POST', '/control/faults', {
            kind: 'hostile-error',
            bot_id: hostileBots[messenger].simulatorId,
            method: messenger === 'telegram' ? 'sendMessage' : 'messages',
            hostile: variant,
            ...(variant === 'not-json' ? { status: 502 } : {}),
          });
          const text = `hostile-${RUN}-${variant}-${messenger}`;
          texts.push(text);
          const eventId = await sandbox.send(hostile.apiKey, {
            phone_number: hostilePeople[messenger].phone,
            service: messenger,
            text,
          });
          const state = await sandbox.finishedState(hostile.apiKey, eventId, REACH_MS);
          // The fault hit (a 502 with no JSON: MAX's SDK retries it, and the retry goes out).
          expect(state.state, messenger).toBe(
            variant === 'not-json' && messenger === 'max' ? 'sent' : 'failed',
          );
          if (variant !== 'not-json') expect(state.error_description, messenger).toContain('\ufffd');
          expect(unclean(state), `${messenger}: ${state.error_description?.slice(0, 200)}`).toEqual([]);
          expect(String(state.error_description ?? '').length).toBeLessThanOrEqual(2_000);
        }),
      );
      await otherCompanyStillFlows(`the messengers answered ${variant}`);
    },
  );

  it('people whose names and shared contacts hold such bytes start the bots, share them and write; they are reached', async () => {
    for (const messenger of ['telegram', 'max'] as const) {
      const bot = hostileBots[messenger];
      const person = await sandbox.person(uniquePhone(), HOSTILE_NAME);
      phones.push(person.phone);
      await sandbox.act(person, 'start', bot);
      // Someone else's card with a NUL in its number, another with a hostile name, then their own.
      const stranger = uniquePhone();
      phones.push(stranger);
      await sandbox.act(person, 'share_contact', bot, {
        contact: {
          phone_number: `${stranger.slice(0, 4)}\u0000\u001b${stranger.slice(4)}`,
          first_name: HOSTILE_NAME,
        },
      });
      await sandbox.act(person, 'share_contact', bot, {
        contact: { phone_number: stranger, first_name: HOSTILE_NAME, last_name: hostileText('card') },
      });
      await sandbox.act(person, 'share_contact', bot);
      const written = hostileText(`written-${messenger}`);
      texts.push(written);
      await sandbox.act(person, 'send_text', bot, { text: written });
      await sandbox.waitForLink(hostile.companyId, person.phone, bot, true, REACH_MS);
      const text = `hostile-${RUN}-to-${messenger}`;
      texts.push(text);
      const eventId = await sandbox.send(hostile.apiKey, {
        phone_number: person.phone,
        service: messenger,
        text,
      });
      expect((await sandbox.finishedState(hostile.apiKey, eventId, REACH_MS)).state).toBe('sent');
    }
    await otherCompanyStillFlows('people of hostile names and contacts acted');
  });

  it("a browser walk of the dashboard after it all: the other company's owner sees a new message within 30 s, in the log and on its timeline", async () => {
    const browser = await launchChromium();
    try {
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
      await page.goto(await sandbox.member(good.companyId, `walker-${RUN}@e2e.test`));
      await byTestId(page, 'name').fill('Steady Walker');
      await byTestId(page, 'new-password').fill(PASSWORD);
      await byTestId(page, 'repeat-password').fill(PASSWORD);
      await byTestId(page, 'save-password').click();
      await byTestId(page, 'company-name').waitFor();
      const text = `steady-${RUN}-browser`;
      texts.push(text);
      const started = Date.now();
      const eventId = await sandbox.send(good.apiKey, {
        phone_number: goodPeople.telegram.phone,
        service: 'telegram',
        text,
      });
      // The message log, as a person would keep looking at it (a reload every few seconds).
      await eventually(
        `${eventId} in the message log in the browser`,
        async () => {
          await page.goto(`${sandbox.dashboardUrl}/messages`);
          await byTestId(page, 'messages-table').waitFor({ timeout: REACH_MS });
          if ((await byTestId(page, `message-${eventId}`).count()) === 1) return true;
          await sleep(2_000);
          return false;
        },
        REACH_MS,
      );
      const seenAfter = Date.now() - started;
      await page.goto(`${sandbox.dashboardUrl}/messages/${eventId}`);
      await expect
        .poll(() => byTestId(page, 'message-state').textContent(), { timeout: REACH_MS })
        .toBe('sent');
      expect(await page.textContent('body')).toContain(text);
      expect(await byTestId(page, 'freshness-banner').count()).toBe(0);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'after-hostile-timeline.png'), fullPage: true });
      timings.push(['the browser walk: a new message in the log', seenAfter]);
    } finally {
      await browser.close();
    }
  });

  it('leaves no phone number or text of the run in any log line, and nothing set aside', async () => {
    expect(phones.length).toBeGreaterThan(10);
    expect(texts.length).toBeGreaterThan(10);
    const needles = [...phones, ...texts.map((t) => t.split(' ')[0]!), `hostile-${RUN}`];
    expect(logLinesHolding(stack, needles)).toEqual([]);
    // The grep reads the services' real logs: their request lines are there.
    expect(logLinesHolding(stack, ['"msg":"request"']).length).toBeGreaterThan(50);
    expect(await setAside(stack.databaseUrl)).toEqual([]);
  });
});

type EndpointMode = 'nul' | 'invalid-utf8' | 'huge' | 'trickle' | 'redirect' | 'trap';

/**
 * Webhook endpoints that answer what no client should trust, one per path (`/nul`, `/invalid-utf8`, `/huge`,
 * `/trickle`, `/redirect`), and `/trap`, where the redirect points: nothing may come there.
 */
class HostileEndpoint {
  private server: Server | undefined;
  private readonly counts = new Map<string, number>();
  private base = '';

  hits(mode: EndpointMode): number {
    return this.counts.get(mode) ?? 0;
  }

  urlOf(mode: EndpointMode): string {
    return `${this.base}/${mode}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      res.on('error', () => undefined);
      req.resume();
      req.on('end', () => {
        const mode = (req.url ?? '').slice(1) as EndpointMode;
        this.counts.set(mode, this.hits(mode) + 1);
        switch (mode) {
          case 'nul':
            res.writeHead(500, { 'content-type': 'text/plain' }).end(`boom \u0000 ${hostileText('answer')}`);
            return;
          case 'invalid-utf8':
            res
              .writeHead(500, { 'content-type': 'application/json; charset=utf-8' })
              .end(Buffer.from([0x7b, 0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80, 0xe2, 0x82, 0x00, 0x7d]));
            return;
          case 'huge': {
            const chunk = Buffer.concat([Buffer.from('boom \u0000 '), Buffer.from([0xff, 0xc0, 0x80])]);
            res.writeHead(500, { 'content-type': 'text/plain' }).end(Buffer.alloc(10 * 1024 * 1024, chunk));
            return;
          }
          case 'trickle': {
            res.writeHead(200, { 'content-type': 'text/plain' });
            let sent = 0;
            const timer = setInterval(() => {
              if (res.destroyed || sent >= TRICKLE_BYTES) {
                clearInterval(timer);
                res.end();
                return;
              }
              res.write(Buffer.from([sent++ % 2 ? 0x00 : 0xff]));
            }, 1_000);
            return;
          }
          case 'redirect':
            res.writeHead(307, { location: this.urlOf('trap') }).end();
            return;
          default:
            res.writeHead(200).end();
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    if (!this.server) return Promise.resolve();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}
