import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { topics, type Complete, type MessageEvent } from '@mds/contracts';
import { createKafkaClient, readToEnd } from '@mds/kafka';
import {
  freePort,
  isAlive,
  restartKafka,
  restartPostgres,
  runDir,
  startInfra,
  type Infra,
} from '@mds/local-infra';
import { eventually, uniqueName } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';
import { Stack } from './harness.js';
import {
  deliveryServices,
  Sandbox,
  WebhookReceiver,
  type DemoCompany,
  type Messenger,
  type SimulatedBot,
  type SimulatedPerson,
} from './sandbox.js';

// Failure drills: the whole delivery service as real processes on a broker and a PostgreSQL of its own
// (the drill stops them, so it cannot share the run's), under a steady stream of sends by a client that
// retries like a real one. In turn: SIGKILL and restart of every service, a broker restart, a database
// restart. Afterwards every accepted message has exactly one outcome, the read API agrees, its webhook
// came (repeats only with the same webhook-id and state), and nobody received a message twice.

const RATE_PER_SECOND = 25;
const MAX_SENDS = 4_000;
const PEOPLE = 12;
const MAX_IN_FLIGHT = 200;
const LOAD_BETWEEN_DRILLS_MS = 4_000;
/** How long a send is retried (same Idempotency-Key) before the client gives up on it. */
const SEND_PATIENCE_MS = 120_000;

const infraName = uniqueName('drill');
// The drill's own processes: never the run's shared broker and database, and never containers (a drill
// restarts them by process id).
const infraEnv = { ...process.env, KAFKA_BROKERS: '', DATABASE_URL: '', MDS_INFRA: 'local' };
const logger = createLogger({ service: 'drills-e2e', level: 'silent' });
let infra: Infra | undefined;
let stack: Stack | undefined;
let sandbox: Sandbox;
const receiver = new WebhookReceiver();

beforeAll(async () => {
  infra = await startInfra({ name: infraName, ephemeral: true, env: infraEnv });
  await receiver.start();
  const adminToken = `e2e-admin-${randomBytes(12).toString('hex')}`;
  const grpcPort = await freePort();
  stack = await Stack.start({
    infra,
    env: { INTERNAL_GRPC_TOKEN: randomBytes(24).toString('base64url') },
    services: deliveryServices({
      grpcPort,
      adminToken,
      env: {
        // Not what the drill is about: after an outage a couple of hundred open requests retry at once,
        // which the default 100 sends/s per key would answer with 429s (as documented); the drill also
        // reads every accepted id back at the end.
        gateway: {
          RATE_LIMIT_SEND_PER_KEY: '1000',
          RATE_LIMIT_SEND_PER_COMPANY: '1000',
          RATE_LIMIT_READ_PER_KEY: '1000',
          RATE_LIMIT_READ_PER_COMPANY: '1000',
        },
      },
    }),
  });
  sandbox = new Sandbox(stack, adminToken);
}, 240_000);

afterAll(async () => {
  await receiver.close();
  await stack?.stop();
  // The drill's broker and database logs go with the services' (the run folder is removed on stop).
  if (stack) {
    for (const [from, to] of [
      ['kafka/kafka.log', 'kafka.log'],
      ['postgres/postgres.log', 'postgres.log'],
    ] as const) {
      const file = join(runDir(infraName, infraEnv), from);
      if (existsSync(file)) copyFileSync(file, join(stack.artifacts, to));
    }
  }
  await infra?.stop();
}, 60_000);

interface Send {
  i: number;
  messenger: Messenger;
  person: SimulatedPerson;
  text: string;
  /** The event_id of the 202, once one came. */
  eventId?: string;
  /** Why the client gave up (an answer that is not worth retrying, or no 202 in SEND_PATIENCE_MS). */
  gaveUp?: string;
  attempts: number;
}

/** One send as a careful client makes it: network errors, 409, 429 and 5xx are retried with the same key and body. */
async function send(company: DemoCompany, s: Send): Promise<void> {
  const body = {
    phone_number: s.person.phone,
    text: s.text,
    service: s.messenger,
    ...(s.i % 3 === 0 ? { buttons: [{ text: `Open ${s.i}`, url: `https://example.com/drill/${s.i}` }] } : {}),
  };
  const key = `drill-${s.i}`;
  const deadline = Date.now() + SEND_PATIENCE_MS;
  let last = '';
  while (Date.now() < deadline) {
    s.attempts++;
    // Exponential backoff with jitter, or what Retry-After asks if longer.
    let wait = Math.min(2_000, 100 * 2 ** Math.min(s.attempts, 5)) * (0.5 + Math.random() / 2);
    try {
      const response = await fetch(`${sandbox.gatewayUrl}/api/v1/send`, {
        method: 'POST',
        headers: { 'x-api-key': company.apiKey, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      if (response.status === 202) {
        s.eventId = (JSON.parse(text) as { event_id: string }).event_id;
        return;
      }
      last = `${response.status} ${text}`;
      if (response.status !== 409 && response.status !== 429 && response.status < 500) {
        s.gaveUp = last;
        return;
      }
      const retryAfter = Number(response.headers.get('retry-after'));
      if (retryAfter > 0) wait = Math.max(wait, Math.min(retryAfter * 1000, 5_000));
    } catch (error) {
      last = String(error);
    }
    await sleep(wait);
  }
  s.gaveUp = `no 202 in ${SEND_PATIENCE_MS} ms; last: ${last}`;
}

const SERVICES = ['client-registry', 'telegram-sender', 'max-sender', 'webhook-dispatcher', 'gateway'];

/** Every service's /readyz answers 200; a process that died by itself is recorded and started again (as Kubernetes would). */
async function allReady(what: string, exits: string[]): Promise<void> {
  const s = stack!;
  try {
    await eventually(
      `every service ready after ${what}`,
      async () => {
        for (const name of [...SERVICES, 'messenger-simulator']) {
          const service = s.service(name);
          if (service.pid !== undefined && !isAlive(service.pid)) {
            exits.push(`${name} exited by itself after ${what}`);
            await service.start();
          }
        }
        const ready = await Promise.all(SERVICES.map((name) => s.service(name).ready()));
        return ready.every(Boolean);
      },
      120_000,
    );
  } catch (error) {
    const states = await Promise.all(
      SERVICES.map(async (name) => {
        try {
          const response = await fetch(`${s.service(name).url}/readyz`, {
            signal: AbortSignal.timeout(2_000),
          });
          return `${name} ${response.status} ${await response.text()}`;
        } catch (e) {
          return `${name} ${String(e)}`;
        }
      }),
    );
    throw new Error(`${String(error)}:\n${states.join('\n')}\n(logs in ${s.artifacts})`, { cause: error });
  }
}

it(
  'every accepted message has one outcome and its webhook through crashes of every service, a broker restart and a database restart',
  { timeout: 600_000 },
  async () => {
    const s = stack!;
    const company = await sandbox.company('Drills', receiver.url);
    receiver.verifyWith(company.secrets);
    const bots: Record<Messenger, SimulatedBot> = {
      telegram: await sandbox.bot(company.companyId, 'telegram', 'drill_tg'),
      max: await sandbox.bot(company.companyId, 'max', 'drill_max'),
    };
    const people = await Promise.all(
      Array.from({ length: PEOPLE }, async (_, i) => {
        const phone = `7916${String(7_000_000 + i).padStart(7, '0')}`;
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
        async () => {
          const client = await sandbox.admin<{ links: { reachable: boolean }[] }>(
            'GET',
            `/companies/${company.companyId}/clients/${person.phone}`,
          );
          return client.links.filter((l) => l.reachable).length === 2;
        },
        60_000,
      );
    }

    // The load: RATE_PER_SECOND sends a second until the drills are over.
    const sends: Send[] = [];
    const inFlight = new Set<Promise<void>>();
    let loading = true;
    const load = (async () => {
      let next = Date.now();
      while (loading && sends.length < MAX_SENDS) {
        const i = sends.length;
        const s_: Send = {
          i,
          messenger: i % 2 === 0 ? 'telegram' : 'max',
          person: people[Math.floor(i / 2) % PEOPLE]!,
          text: `drill #${i} ${randomBytes(3).toString('hex')}`,
          attempts: 0,
        };
        // A client keeps a bounded number of requests open; past it, it waits (as its own queue would).
        while (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
        sends.push(s_);
        const p = send(company, s_).finally(() => inFlight.delete(p));
        inFlight.add(p);
        // A steady pace; after a pause (the cap above) it goes on at the same pace, without a burst.
        next = Math.max(next + 1000 / RATE_PER_SECOND, Date.now());
        await sleep(next - Date.now());
      }
    })();

    const exits: string[] = [];
    const drills: [string, () => Promise<void>][] = [
      ...SERVICES.map((name): [string, () => Promise<void>] => [
        `kill -9 ${name}`,
        () => s.service(name).restart('SIGKILL'),
      ]),
      ['Kafka broker restart', () => restartKafka(infraName, infraEnv)],
      ['PostgreSQL restart', () => restartPostgres(infraName, infraEnv)],
    ];
    const timings: string[] = [];
    await sleep(LOAD_BETWEEN_DRILLS_MS);
    for (const [what, drill] of drills) {
      const t0 = Date.now();
      await drill();
      await allReady(what, exits);
      timings.push(`${what}: ready again in ${Date.now() - t0} ms`);
      console.log(
        `[drills] ${timings.at(-1)!} (sends so far ${sends.length}, waiting for an answer ${inFlight.size})`,
      );
      await sleep(LOAD_BETWEEN_DRILLS_MS);
    }
    loading = false;
    await load;
    await Promise.all(inFlight);

    const accepted = sends.filter((x) => x.eventId !== undefined);
    const ids = new Set(accepted.map((x) => x.eventId!));
    const statusWebhooks = (id: string) =>
      receiver.about(id).filter((w) => w.payload?.type === 'message.status');
    await eventually(
      'a webhook for every accepted message',
      () => accepted.every((x) => statusWebhooks(x.eventId!).length > 0),
      180_000,
    ).catch(() => undefined); // what is missing is counted and asserted below

    // Outcomes on mds.message.v1, read to its end.
    const events: Complete<MessageEvent>[] = [];
    await readToEnd<MessageEvent>({
      kafka: createKafkaClient({ brokers: infra!.kafkaBrokers.split(','), clientId: 'drills-e2e' }, logger),
      logger,
      topics: [topics.message],
      topicPrefix: s.topicPrefix,
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
    const terminal = (e: Complete<MessageEvent>) =>
      e.event.$case === 'messageSent'
        ? { state: 'sent', code: undefined }
        : e.event.$case === 'messageDeliveryFailed'
          ? { state: 'failed', code: e.event.value.errorCode }
          : undefined;

    let lost = 0;
    let twoOutcomes = 0;
    let acceptedTwice = 0;
    let noWebhook = 0;
    let webhooksRepeated = 0;
    let inconsistentWebhooks = 0;
    let unverified = 0;
    let unconfirmed = 0;
    let readApiDisagrees = 0;
    const problems: string[] = [];
    const finalState = new Map<string, { state: string; code: string | undefined }>();
    for (const x of accepted) {
      const id = x.eventId!;
      if ((acceptances.get(id)?.size ?? 0) > 1) acceptedTwice++;
      const outs = [...(outcomes.get(id)?.values() ?? [])];
      if (outs.length === 0) {
        lost++;
        if (problems.length < 10) problems.push(`${id} (#${x.i}): no outcome on the log`);
        continue;
      }
      if (outs.length > 1) {
        twoOutcomes++;
        problems.push(`${id}: ${outs.length} outcomes ${outs.map((o) => o.event.$case).join(', ')}`);
      }
      const outcome = terminal(outs[0]!)!;
      finalState.set(id, outcome);
      if (outcome.code === 'DELIVERY_UNCONFIRMED') unconfirmed++;
      const hooks = statusWebhooks(id);
      if (hooks.length === 0) {
        noWebhook++;
        if (problems.length < 20) problems.push(`${id} (#${x.i}): ${outcome.state}, no webhook`);
      }
      if (hooks.some((w) => !w.verified)) unverified++;
      if (hooks.length > 1) webhooksRepeated++;
      const webhookIds = new Set(hooks.map((w) => w.headers['webhook-id']));
      const states = new Set(
        hooks.map((w) => `${String(w.payload?.state)}/${String(w.payload?.error_code)}`),
      );
      if (webhookIds.size > 1 || states.size > 1) {
        inconsistentWebhooks++;
        problems.push(`${id}: webhooks ${[...webhookIds].join(',')} states ${[...states].join(',')}`);
      }
      if (hooks.length > 0 && hooks[0]!.payload?.state !== outcome.state) {
        inconsistentWebhooks++;
        problems.push(`${id}: webhook says ${String(hooks[0]!.payload?.state)}, the log ${outcome.state}`);
      }
    }

    const acceptedIds = new Set(accepted.map((x) => x.eventId!));
    const withoutA202 = [...acceptances.keys()].filter((id) => !acceptedIds.has(id)).length;
    let keysWithTwoMessages = 0;
    for (const [key, streams] of streamsOfKey) {
      if (streams.size < 2) continue;
      keysWithTwoMessages++;
      problems.push(
        `${key}: messages ${[...streams].map((id) => `${id}${acceptedIds.has(id) ? ' (its 202)' : ''} ${[...(outcomes.get(id)?.values() ?? [])].map((o) => o.event.$case).join(',')}`).join(' and ')}`,
      );
    }

    // The read API agrees with the log.
    const decided = [...finalState.entries()];
    for (let k = 0; k < decided.length; k += 20) {
      await Promise.all(
        decided.slice(k, k + 20).map(async ([id, outcome]) => {
          const response = await sandbox.api(company.apiKey, `/events/${id}`);
          const body = (await response.json()) as { state?: string; error_code?: string | null };
          if (
            response.status !== 200 ||
            body.state !== outcome.state ||
            (body.error_code ?? undefined) !== outcome.code
          ) {
            readApiDisagrees++;
            if (problems.length < 30)
              problems.push(
                `${id}: read API ${response.status} ${JSON.stringify(body)}, log ${outcome.state}`,
              );
          }
        }),
      );
    }

    // Inboxes: no text twice, and every sent message arrived.
    const received = new Map<string, number>();
    const withButtons = new Set<string>();
    const copies = new Map<string, string[]>();
    for (const person of people) {
      for (const bot of Object.values(bots)) {
        for (const m of await sandbox.inbox(person, bot)) {
          received.set(m.text, (received.get(m.text) ?? 0) + 1);
          copies.set(m.text, [...(copies.get(m.text) ?? []), `${String(m.date)} chat ${String(m.chat_id)}`]);
          if (JSON.stringify(m.buttons ?? []).includes('https://example.com/drill/')) withButtons.add(m.text);
        }
      }
    }
    const buttonsMissing = sends.filter(
      (x) => x.i % 3 === 0 && received.has(x.text) && !withButtons.has(x.text),
    ).length;
    const receivedTwice = [...received.values()].filter((n) => n > 1).length;
    for (const x of sends.filter((y) => (received.get(y.text) ?? 0) > 1)) {
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
    const sentNotReceived = accepted.filter(
      (x) => finalState.get(x.eventId!)?.state === 'sent' && !received.has(x.text),
    ).length;
    const failedCodes = new Map<string, number>();
    for (const { code } of finalState.values())
      if (code) failedCodes.set(code, (failedCodes.get(code) ?? 0) + 1);
    const gaveUp = sends.filter((x) => x.gaveUp);

    console.log(
      [
        `[drills] ${timings.join('; ')}`,
        ...exits.map((e) => `[drills] ${e}`),
        ...gaveUp.slice(0, 5).map((x) => `[drills] send #${x.i} given up: ${x.gaveUp}`),
        ...problems.map((p) => `[drills] ${p}`),
        `[drills] sends ${sends.length} (retried ${sends.filter((x) => x.attempts > 1).length}, given up ${gaveUp.length}), ` +
          `accepted ${accepted.length}: lost ${lost}, duplicate terminal states ${twoOutcomes}, accepted twice ${acceptedTwice}, ` +
          `one request accepted as two messages ${keysWithTwoMessages} (messages on the log without a 202: ${withoutA202}), ` +
          `without webhook ${noWebhook}, webhooks duplicated (same id) ${webhooksRepeated}, inconsistent duplicates ${inconsistentWebhooks}, ` +
          `unverified ${unverified}, read API disagrees ${readApiDisagrees}, unconfirmed ${unconfirmed}, ` +
          `received twice ${receivedTwice}, sent but not received ${sentNotReceived}, buttons missing ${buttonsMissing}; failed by code ${JSON.stringify(Object.fromEntries(failedCodes))}`,
      ].join('\n'),
    );
    expect(accepted.length).toBeGreaterThan(0);
    expect(new Set(accepted.map((x) => x.eventId)).size).toBe(accepted.length);
    expect({
      lost,
      twoOutcomes,
      acceptedTwice,
      keysWithTwoMessages,
      noWebhook,
      inconsistentWebhooks,
      unverified,
      readApiDisagrees,
      receivedTwice,
      sentNotReceived,
      buttonsMissing,
      exits,
    }).toEqual({
      lost: 0,
      twoOutcomes: 0,
      acceptedTwice: 0,
      keysWithTwoMessages: 0,
      noWebhook: 0,
      inconsistentWebhooks: 0,
      unverified: 0,
      readApiDisagrees: 0,
      receivedTwice: 0,
      sentNotReceived: 0,
      buttonsMissing: 0,
      exits: [],
    });
    expect(ids.size).toBe(accepted.length);
  },
);
