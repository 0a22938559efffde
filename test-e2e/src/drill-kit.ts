import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { topics, type Complete, type MessageEvent } from '@mds/contracts';
import { createKafkaClient, readToEnd } from '@mds/kafka';
import { isAlive, runDir } from '@mds/local-infra';
import { eventually } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';
import type { Stack } from './harness.js';
import type {
  DemoCompany,
  Messenger,
  Sandbox,
  SimulatedBot,
  SimulatedPerson,
  WebhookReceiver,
} from './sandbox.js';

// What the failure drills share: a client that sends at a steady pace and retries like a real one, and
// the check afterwards, as an observer of the log, the read API, the webhooks and the people's inboxes.

const logger = createLogger({ service: 'drills-e2e', level: 'silent' });

/**
 * The gateway's settings in a drill. Not what a drill is about: after an outage a couple of hundred open
 * requests retry at once, which the default 100 sends/s per key would answer with 429s (as documented); a
 * drill also reads every accepted id back.
 */
export const DRILL_GATEWAY_ENV = {
  RATE_LIMIT_SEND_PER_KEY: '1000',
  RATE_LIMIT_SEND_PER_COMPANY: '1000',
  RATE_LIMIT_READ_PER_KEY: '1000',
  RATE_LIMIT_READ_PER_COMPANY: '1000',
};

/**
 * The environment of a drill's own broker and database: never the run's shared ones (given by
 * KAFKA_BROKERS and DATABASE_URL), and never containers (a drill restarts them by process id).
 */
export const OWN_INFRA_ENV = { ...process.env, KAFKA_BROKERS: '', DATABASE_URL: '', MDS_INFRA: 'local' };

/** Copies a drill's broker and database logs beside its services' (the run folder goes when it stops). */
export function keepInfraLogs(infraName: string, artifacts: string): void {
  for (const [from, to] of [
    ['kafka/broker.log', 'kafka.log'],
    ['postgres/postgres.log', 'postgres.log'],
  ] as const) {
    const file = join(runDir(infraName, OWN_INFRA_ENV), from);
    if (existsSync(file)) copyFileSync(file, join(artifacts, to));
  }
}

/** The services of the delivery pipeline, in start order (the simulator stands in for the messengers). */
export const DELIVERY_SERVICES = [
  'client-registry',
  'telegram-sender',
  'max-sender',
  'webhook-dispatcher',
  'gateway',
] as const;

export interface Send {
  i: number;
  /** Its Idempotency-Key: the load's key prefix and `i`. */
  key: string;
  messenger: Messenger;
  person: SimulatedPerson;
  text: string;
  /** The event_id of the 202, once one came. */
  eventId?: string;
  /** Why the client gave up (an answer that is not worth retrying, or no 202 in its patience). */
  gaveUp?: string;
  attempts: number;
}

/** One answer the client got: when, its status (0 when the request failed without one) and problem code. */
export interface Answer {
  at: number;
  status: number;
  code?: string;
}

/**
 * People who start both bots of the company and share their contact, with fixed numbers from `firstPhone`
 * on (`7916` + 7 digits); answers once the registry has every link reachable.
 */
export async function drillPeople(
  sandbox: Sandbox,
  company: DemoCompany,
  bots: Record<Messenger, SimulatedBot>,
  count: number,
  firstPhone = 7_000_000,
): Promise<SimulatedPerson[]> {
  const people = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const phone = `7916${String(firstPhone + i).padStart(7, '0')}`;
      // The simulator answers `phone_number`; the phone is ours anyway.
      const person = { ...(await sandbox.person(phone, `Drill${i}`)), phone };
      await sandbox.startAndShareContact(person, bots.telegram);
      await sandbox.startAndShareContact(person, bots.max);
      return person;
    }),
  );
  for (const person of people) {
    await eventually(
      `${person.phone} linked to both bots`,
      async () =>
        (await sandbox.client(company.companyId, person.phone)).links.filter((l) => l.reachable).length === 2,
      60_000,
    );
  }
  return people;
}

/**
 * `rate` sends a second to the people, alternating Telegram and MAX, every third with a button, each
 * retried as a careful client does (network errors, 409, 429 and 5xx, with the same Idempotency-Key and
 * body, backing off) for up to `patienceMs`. At most `maxInFlight` requests are open; past it, the client
 * waits, then goes on at the same pace without a burst.
 */
export class SteadyLoad {
  readonly sends: Send[] = [];
  readonly answers: Answer[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private running = false;
  private loop: Promise<void> = Promise.resolve();

  constructor(
    private readonly o: {
      sandbox: Sandbox;
      company: DemoCompany;
      people: SimulatedPerson[];
      rate: number;
      maxSends: number;
      maxInFlight: number;
      patienceMs: number;
      /** Idempotency-Keys are `${keyPrefix}-${i}` (`drill` unless told): unique per company and load. */
      keyPrefix?: string;
    },
  ) {}

  get waiting(): number {
    return this.inFlight.size;
  }

  start(): void {
    this.running = true;
    this.loop = (async () => {
      let next = Date.now();
      while (this.running && this.sends.length < this.o.maxSends) {
        const i = this.sends.length;
        const send: Send = {
          i,
          key: `${this.o.keyPrefix ?? 'drill'}-${i}`,
          messenger: i % 2 === 0 ? 'telegram' : 'max',
          person: this.o.people[Math.floor(i / 2) % this.o.people.length]!,
          text: `drill #${i} ${randomBytes(3).toString('hex')}`,
          attempts: 0,
        };
        while (this.inFlight.size >= this.o.maxInFlight) await Promise.race(this.inFlight);
        this.sends.push(send);
        const p = this.send(send).finally(() => this.inFlight.delete(p));
        this.inFlight.add(p);
        next = Math.max(next + 1000 / this.o.rate, Date.now());
        await sleep(next - Date.now());
      }
    })();
  }

  /** Stops sending and waits until every open request has its answer (or was given up). */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await Promise.all(this.inFlight);
  }

  private async send(s: Send): Promise<void> {
    const body = {
      phone_number: s.person.phone,
      text: s.text,
      service: s.messenger,
      ...(s.i % 3 === 0
        ? { buttons: [{ text: `Open ${s.i}`, url: `https://example.com/drill/${s.i}` }] }
        : {}),
    };
    Object.assign(
      s,
      await postRetrying({
        url: `${this.o.sandbox.gatewayUrl}/api/v1/send`,
        apiKey: this.o.company.apiKey,
        key: s.key,
        body,
        patienceMs: this.o.patienceMs,
        answers: this.answers,
      }),
    );
  }

  /**
   * How long sends went unanswered by a 202 after `from`: from the first failed answer (a 5xx, or none
   * at all) to the first 202 after it; undefined when nothing failed.
   */
  unavailability(from: number, to = Date.now()): { ms: number; failed: number; status: string } | undefined {
    const window = this.answers.filter((a) => a.at >= from && a.at <= to);
    const failures = window.filter((a) => a.status === 0 || a.status >= 500);
    const first = failures[0];
    if (!first) return undefined;
    const back = window.find((a) => a.at > first.at && a.status === 202);
    return { ms: (back?.at ?? to) - first.at, failed: failures.length, status: tally(failures) };
  }
}

/** What a retrying client got for one request: the event_id of its 202, or why it gave up. */
export interface Posted {
  eventId?: string;
  gaveUp?: string;
  attempts: number;
}

/**
 * One public API request as a careful client makes it: retried on network errors, 409, 429 and 5xx with
 * the same Idempotency-Key and body, backing off (or as Retry-After asks), for up to `patienceMs`. Every
 * answer is recorded in `answers`.
 */
export async function postRetrying(o: {
  url: string;
  apiKey: string;
  key: string;
  body: unknown;
  patienceMs: number;
  answers: Answer[];
}): Promise<Posted> {
  const deadline = Date.now() + o.patienceMs;
  let last = '';
  let attempts = 0;
  while (Date.now() < deadline) {
    attempts++;
    // Exponential backoff with jitter, or what Retry-After asks if longer.
    let wait = Math.min(2_000, 100 * 2 ** Math.min(attempts, 5)) * (0.5 + Math.random() / 2);
    try {
      const response = await fetch(o.url, {
        method: 'POST',
        headers: { 'x-api-key': o.apiKey, 'content-type': 'application/json', 'idempotency-key': o.key },
        body: JSON.stringify(o.body),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      o.answers.push({ at: Date.now(), status: response.status, ...problemCode(text) });
      if (response.status === 202) {
        return { eventId: (JSON.parse(text) as { event_id: string }).event_id, attempts };
      }
      last = `${response.status} ${text}`;
      if (response.status !== 409 && response.status !== 429 && response.status < 500) {
        return { gaveUp: last, attempts };
      }
      const retryAfter = Number(response.headers.get('retry-after'));
      if (retryAfter > 0) wait = Math.max(wait, Math.min(retryAfter * 1000, 5_000));
    } catch (error) {
      o.answers.push({ at: Date.now(), status: 0 });
      last = String(error);
    }
    await sleep(wait);
  }
  return { gaveUp: `no 202 in ${o.patienceMs} ms; last: ${last}`, attempts };
}

function problemCode(body: string): { code?: string } {
  try {
    const code = (JSON.parse(body) as { code?: unknown }).code;
    return typeof code === 'string' ? { code } : {};
  } catch {
    return {};
  }
}

/** "12× 503 broker_unavailable, 2× no answer": answers counted by status and problem code. */
export function tally(answers: readonly Answer[]): string {
  const counts = new Map<string, number>();
  for (const a of answers) {
    const what = a.status === 0 ? 'no answer' : `${a.status}${a.code ? ` ${a.code}` : ''}`;
    counts.set(what, (counts.get(what) ?? 0) + 1);
  }
  return [...counts].map(([what, n]) => `${n}× ${what}`).join(', ');
}

/**
 * Every process of the stack is running and ready; one that died by itself is recorded in `exits` and
 * started again (as Kubernetes would). Throws with each process's /readyz when it takes over 2 minutes.
 */
export async function allReady(stack: Stack, what: string, exits: string[]): Promise<void> {
  try {
    await eventually(
      `every process ready after ${what}`,
      async () => {
        for (const { service, replica } of stack.processes()) {
          if (replica.pid !== undefined && !isAlive(replica.pid)) {
            exits.push(`${replica.label} (${service}) exited by itself after ${what}`);
            await replica.start();
          }
        }
        const ready = await Promise.all(stack.processes().map(({ replica }) => replica.ready()));
        return ready.every(Boolean);
      },
      120_000,
    );
  } catch (error) {
    const states = await Promise.all(
      stack.processes().map(async ({ replica }) => {
        try {
          const response = await fetch(`${replica.opsUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
          return `${replica.label} ${response.status} ${await response.text()}`;
        } catch (e) {
          return `${replica.label} ${String(e)}`;
        }
      }),
    );
    throw new Error(`${String(error)}:\n${states.join('\n')}\n(logs in ${stack.artifacts})`, {
      cause: error,
    });
  }
}

/** What the check found; every count but `accepted`, `unconfirmed` and `webhooksRepeated` must be 0. */
export interface Findings {
  accepted: number;
  lost: number;
  twoOutcomes: number;
  acceptedTwice: number;
  keysWithTwoMessages: number;
  withoutA202: number;
  noWebhook: number;
  webhooksRepeated: number;
  inconsistentWebhooks: number;
  unverified: number;
  readApiDisagrees: number;
  unconfirmed: number;
  receivedTwice: number;
  sentNotReceived: number;
  buttonsMissing: number;
  failedCodes: Record<string, number>;
  /** Each accepted message's outcome on the log: its state, error code and when it happened (ms). */
  outcomes: Map<string, Outcome>;
  problems: string[];
}

/** A message's outcome as the log has it. */
export interface Outcome {
  state: string;
  code: string | undefined;
  at: number;
}

/** The counts of `Findings` that must be 0. */
const FAULTS = [
  'lost',
  'twoOutcomes',
  'acceptedTwice',
  'keysWithTwoMessages',
  'noWebhook',
  'inconsistentWebhooks',
  'unverified',
  'readApiDisagrees',
  'receivedTwice',
  'sentNotReceived',
  'buttonsMissing',
] as const satisfies readonly (keyof Findings)[];

/** The counts of `Findings` that must be 0, by name. */
export function faults(f: Findings): Record<string, number> {
  return Object.fromEntries(FAULTS.map((k) => [k, f[k]]));
}

/** What the check found, short: the faults that are not 0 (or that there are none) and the harmless repeats. */
export function summarizeFindings(f: Findings): string {
  const found = Object.entries(faults(f)).filter(([, n]) => n > 0);
  const notes = [
    f.webhooksRepeated ? `${f.webhooksRepeated} webhooks repeated with the same webhook-id` : '',
    f.unconfirmed ? `${f.unconfirmed} DELIVERY_UNCONFIRMED` : '',
  ].filter(Boolean);
  return (
    `${f.accepted} accepted: ` +
    (found.length === 0
      ? 'each with one outcome, the read API agreeing, one verified webhook; nobody received a message twice'
      : `FAULTS ${found.map(([k, n]) => `${k} ${n}`).join(', ')}`) +
    (notes.length ? `; ${notes.join(', ')}` : '')
  );
}

/** One line of what the check found, for the drill's output. */
export function describeFindings(f: Findings): string {
  return (
    `accepted ${f.accepted}: lost ${f.lost}, duplicate terminal states ${f.twoOutcomes}, accepted twice ${f.acceptedTwice}, ` +
    `one request accepted as two messages ${f.keysWithTwoMessages} (messages on the log without a 202: ${f.withoutA202}), ` +
    `without webhook ${f.noWebhook}, webhooks duplicated (same id) ${f.webhooksRepeated}, inconsistent duplicates ${f.inconsistentWebhooks}, ` +
    `unverified ${f.unverified}, read API disagrees ${f.readApiDisagrees}, unconfirmed ${f.unconfirmed}, ` +
    `received twice ${f.receivedTwice}, sent but not received ${f.sentNotReceived}, buttons missing ${f.buttonsMissing}; ` +
    `failed by code ${JSON.stringify(f.failedCodes)}`
  );
}

/**
 * Checks the accepted ones among `sends` (and every inbox) once their webhooks came or `webhookWaitMs`
 * passed: each `event_id` has exactly one outcome on `mds.message.v1`, the read API says the same, one
 * verified `message.status` webhook came (repeats only with the same `webhook-id` and state), and no
 * person received a text twice. `allSends` (every send so far) tells the log's messages without a 202 from
 * those of sends still open.
 */
export async function checkOutcomes(o: {
  stack: Stack;
  sandbox: Sandbox;
  company: DemoCompany;
  receiver: WebhookReceiver;
  people: SimulatedPerson[];
  bots: Record<Messenger, SimulatedBot>;
  sends: readonly Send[];
  allSends?: readonly Send[];
  webhookWaitMs?: number;
}): Promise<Findings> {
  const accepted = o.sends.filter((x) => x.eventId !== undefined);
  const statusWebhooks = (id: string) =>
    o.receiver.about(id).filter((w) => w.payload?.type === 'message.status');
  await eventually(
    'a webhook for every accepted message',
    () => accepted.every((x) => statusWebhooks(x.eventId!).length > 0),
    o.webhookWaitMs ?? 180_000,
  ).catch(() => undefined); // what is missing is counted below

  // Outcomes on mds.message.v1, read to its end.
  const events: Complete<MessageEvent>[] = [];
  await readToEnd<MessageEvent>({
    kafka: createKafkaClient(
      { brokers: o.stack.infra.kafkaBrokers.split(','), clientId: 'drills-e2e' },
      logger,
    ),
    logger,
    topics: [topics.message],
    topicPrefix: o.stack.topicPrefix,
    handleBatch: (batch) => {
      events.push(...batch.map((e) => e.record));
      return Promise.resolve();
    },
  });
  const outcomes = new Map<string, Map<string, Complete<MessageEvent>>>();
  const acceptances = new Map<string, Set<string>>();
  // One request (its Idempotency-Key) must be one message: two event_ids for one key is a duplicate.
  const streamsOfKey = new Map<string, Set<string>>();
  for (const e of events) {
    const stream = e.metadata.streamId;
    if (e.event.$case === 'messageAccepted') {
      acceptances.set(stream, (acceptances.get(stream) ?? new Set()).add(e.metadata.eventId));
      const key = e.event.value.idempotencyKey;
      streamsOfKey.set(key, (streamsOfKey.get(key) ?? new Set()).add(stream));
    } else {
      const byEvent = outcomes.get(stream) ?? new Map<string, Complete<MessageEvent>>();
      byEvent.set(e.metadata.eventId, e);
      outcomes.set(stream, byEvent);
    }
  }
  const terminal = (e: Complete<MessageEvent>): Outcome | undefined => {
    const at = e.metadata.occurredAt?.getTime() ?? 0;
    return e.event.$case === 'messageSent'
      ? { state: 'sent', code: undefined, at }
      : e.event.$case === 'messageDeliveryFailed'
        ? { state: 'failed', code: e.event.value.errorCode, at }
        : undefined;
  };

  const f: Findings = {
    accepted: accepted.length,
    lost: 0,
    twoOutcomes: 0,
    acceptedTwice: 0,
    keysWithTwoMessages: 0,
    withoutA202: 0,
    noWebhook: 0,
    webhooksRepeated: 0,
    inconsistentWebhooks: 0,
    unverified: 0,
    readApiDisagrees: 0,
    unconfirmed: 0,
    receivedTwice: 0,
    sentNotReceived: 0,
    buttonsMissing: 0,
    failedCodes: {},
    outcomes: new Map(),
    problems: [],
  };
  const problems = f.problems;
  const finalState = f.outcomes;
  for (const x of accepted) {
    const id = x.eventId!;
    if ((acceptances.get(id)?.size ?? 0) > 1) f.acceptedTwice++;
    const outs = [...(outcomes.get(id)?.values() ?? [])];
    if (outs.length === 0) {
      f.lost++;
      if (problems.length < 10) problems.push(`${id} (#${x.i}): no outcome on the log`);
      continue;
    }
    if (outs.length > 1) {
      f.twoOutcomes++;
      problems.push(`${id}: ${outs.length} outcomes ${outs.map((e) => e.event.$case).join(', ')}`);
    }
    const outcome = terminal(outs[0]!)!;
    finalState.set(id, outcome);
    if (outcome.code === 'DELIVERY_UNCONFIRMED') f.unconfirmed++;
    const hooks = statusWebhooks(id);
    if (hooks.length === 0) {
      f.noWebhook++;
      if (problems.length < 20) problems.push(`${id} (#${x.i}): ${outcome.state}, no webhook`);
    }
    if (hooks.some((w) => !w.verified)) f.unverified++;
    if (hooks.length > 1) f.webhooksRepeated++;
    const webhookIds = new Set(hooks.map((w) => w.headers['webhook-id']));
    const states = new Set(hooks.map((w) => `${String(w.payload?.state)}/${String(w.payload?.error_code)}`));
    if (webhookIds.size > 1 || states.size > 1) {
      f.inconsistentWebhooks++;
      problems.push(`${id}: webhooks ${[...webhookIds].join(',')} states ${[...states].join(',')}`);
    }
    if (hooks.length > 0 && hooks[0]!.payload?.state !== outcome.state) {
      f.inconsistentWebhooks++;
      problems.push(`${id}: webhook says ${String(hooks[0]!.payload?.state)}, the log ${outcome.state}`);
    }
  }

  const acceptedIds = new Set((o.allSends ?? o.sends).filter((x) => x.eventId).map((x) => x.eventId!));
  const open = (o.allSends ?? o.sends).some((x) => !x.eventId && !x.gaveUp);
  f.withoutA202 = [...acceptances.keys()].filter((id) => !acceptedIds.has(id)).length;
  const keysChecked = new Set(o.sends.map((x) => x.key));
  for (const [key, streams] of streamsOfKey) {
    if (streams.size < 2 || !keysChecked.has(key)) continue;
    f.keysWithTwoMessages++;
    problems.push(
      `${key}: messages ${[...streams].map((id) => `${id}${acceptedIds.has(id) ? ' (its 202)' : ''} ${[...(outcomes.get(id)?.values() ?? [])].map((e) => e.event.$case).join(',')}`).join(' and ')}`,
    );
  }
  if (open && f.withoutA202 > 0)
    problems.push(
      `(the ${f.withoutA202} messages on the log without a 202 include those of requests still open)`,
    );

  // The read API agrees with the log (a 5xx or a 429 is retried for a while, as a client retries it: the
  // check reads thousands of ids at once, past the read rate limit's burst).
  const read = async (
    id: string,
  ): Promise<{ status: number; body: { state?: string; error_code?: string | null } }> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const response = await o.sandbox.api(o.company.apiKey, `/events/${id}`).catch(() => undefined);
      const status = response?.status ?? 0;
      const body = response
        ? ((await response.json()) as { state?: string; error_code?: string | null })
        : {};
      if ((status !== 0 && status < 500 && status !== 429) || Date.now() > deadline) return { status, body };
      await sleep(500);
    }
  };
  const decided = [...finalState.entries()];
  for (let k = 0; k < decided.length; k += 50) {
    await Promise.all(
      decided.slice(k, k + 50).map(async ([id, outcome]) => {
        const response = await read(id);
        const body = response.body;
        if (
          response.status !== 200 ||
          body.state !== outcome.state ||
          (body.error_code ?? undefined) !== outcome.code
        ) {
          f.readApiDisagrees++;
          if (problems.length < 30)
            problems.push(`${id}: read API ${response.status} ${JSON.stringify(body)}, log ${outcome.state}`);
        }
      }),
    );
  }

  // Inboxes: no text twice, and every sent message arrived.
  const received = new Map<string, number>();
  const withButtons = new Set<string>();
  const copies = new Map<string, string[]>();
  for (const person of o.people) {
    for (const bot of Object.values(o.bots)) {
      for (const m of await o.sandbox.inbox(person, bot)) {
        received.set(m.text, (received.get(m.text) ?? 0) + 1);
        copies.set(m.text, [...(copies.get(m.text) ?? []), `${String(m.date)} chat ${String(m.chat_id)}`]);
        if (JSON.stringify(m.buttons ?? []).includes('https://example.com/drill/')) withButtons.add(m.text);
      }
    }
  }
  f.buttonsMissing = o.sends.filter(
    (x) => x.i % 3 === 0 && received.has(x.text) && !withButtons.has(x.text),
  ).length;
  f.receivedTwice = [...received.values()].filter((n) => n > 1).length;
  for (const x of (o.allSends ?? o.sends).filter((y) => (received.get(y.text) ?? 0) > 1)) {
    const history = events
      .filter((e) => e.metadata.streamId === x.eventId)
      .map(
        (e) =>
          `${e.event.$case} ${e.metadata.eventId} by ${e.metadata.producer} at ${e.metadata.occurredAt?.toISOString()}`,
      );
    problems.push(
      `#${x.i} ${x.messenger} "${x.text}" received ${received.get(x.text)} times (${copies.get(x.text)!.join(', ')}): ${x.eventId}: ${history.join('; ')}`,
    );
  }
  f.sentNotReceived = accepted.filter(
    (x) => finalState.get(x.eventId!)?.state === 'sent' && !received.has(x.text),
  ).length;
  for (const { code } of finalState.values()) if (code) f.failedCodes[code] = (f.failedCodes[code] ?? 0) + 1;
  return f;
}
