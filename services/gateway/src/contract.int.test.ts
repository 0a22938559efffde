import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEvent, topics, type MessageEvent } from '@mds/contracts';
import { openDatabase } from '@mds/db';
import type { EventPublisher } from '@mds/kafka';
import {
  companyWithKey,
  eventually,
  FINGERPRINT_KEY,
  post,
  stackPublisher,
  startStack,
  type TestStack,
} from '../test/support.js';
import { createIdempotencyStore } from './adapters/idempotency.js';
import { fingerprinter } from './application/fingerprint.js';

// The running gateway against its own OpenAPI document: every documented status of every path is
// produced for real and its response checked against the documented schema.
let stack: TestStack;
let broken: TestStack;
let noRegistry: TestStack;
let publisher: EventPublisher;
type Operation = { responses: Record<string, { content?: Record<string, { schema: { $ref: string } }> }> };
let doc: { paths: Record<string, Record<string, Operation>> };
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);

beforeAll(async () => {
  const limits = {
    RATE_LIMIT_SEND_PER_KEY: '1',
    RATE_LIMIT_OTHER_PER_KEY: '1',
    RATE_LIMIT_READ_PER_KEY: '1',
    RATE_LIMIT_BURST_SECONDS: '1',
    MAX_BODY_BYTES: '2048',
    MAX_BATCH_BODY_BYTES: '2048',
  };
  stack = await startStack(limits);
  broken = await startStack();
  noRegistry = await startStack({ REGISTRY_GRPC_ADDRESS: '127.0.0.1:1' });
  publisher = await stackPublisher(stack);
  doc = (await (await fetch(`${stack.gatewayUrl}/api/v1/openapi.json`)).json()) as typeof doc;
  ajv.addSchema({ ...doc, $id: 'openapi.json' });
});
afterAll(async () => {
  await publisher?.disconnect();
  await stack?.stop();
  await broken?.stop();
  await noRegistry?.stop();
});

const CANCEL_PATH = '/api/v1/cancel';
const bodies: Record<string, unknown> = {
  '/api/v1/send': { phone_number: '79123456789', text: 'hello', service: 'telegram' },
  // An id no company has: what needs a message of the caller's (202, 409) is produced apart, below.
  [CANCEL_PATH]: { event_id: randomUUID() },
  '/api/v1/change_phone': { old_phone: '79123456789', new_phone: '79876543210' },
  '/api/v1/client/check': { phone_number: '79123456789' },
  '/api/v1/send/batch': {
    messages: [{ phone_number: '79123456789', text: 'hello', service: 'telegram', idempotency_key: 'k' }],
  },
};
const invalid: Record<string, unknown> = {
  '/api/v1/send': { phone_number: '123', text: '', service: 'sms' },
  '/api/v1/change_phone': { old_phone: '79123456789' },
  '/api/v1/client/check': { phone_number: 'x' },
  '/api/v1/send/batch': { messages: [] },
  [CANCEL_PATH]: { event_id: 42 },
};
const BATCH = '/api/v1/send/batch';
/** A batch has no Idempotency-Key header (its messages have theirs), so no request of it is in flight: no 409. */
const statusesOf = (path: string) =>
  Object.keys(producersOf(path)).filter((s) => !(path === BATCH && s === '409'));

type Produce = (path: string) => Promise<Response>;
const raw = (target: TestStack, path: string, body: unknown, headers: Record<string, string> = {}) =>
  post(target, path.replace('/api/v1', ''), body, headers);

const producers: Record<string, Produce> = {
  '202': async (path) =>
    raw(stack, path, bodies[path], { 'x-api-key': (await companyWithKey(stack)).apiKey }),
  '400': async (path) => raw(stack, path, '{"oops":', { 'x-api-key': (await companyWithKey(stack)).apiKey }),
  '401': async (path) => raw(stack, path, bodies[path]),
  // A key of another scope than the path's (send, check, change_phone).
  '403': async (path) =>
    raw(stack, path, bodies[path], { 'x-api-key': (await companyWithKey(stack, 'Scoped', ['read'])).apiKey }),
  '409': async (path) => {
    const { apiKey, keyId } = await companyWithKey(stack);
    const key = randomUUID();
    const db = await openDatabase({ url: stack.databaseUrl, schema: 'gateway' });
    try {
      const short = path.replace('/api/v1', '');
      const fingerprint = fingerprinter([FINGERPRINT_KEY])(`POST ${short}`, bodies[path]);
      await createIdempotencyStore({ db, ttlHours: 24 }).claim(keyId, key, fingerprint, randomUUID());
    } finally {
      await db.destroy();
    }
    return raw(stack, path, bodies[path], { 'x-api-key': apiKey, 'idempotency-key': key });
  },
  '413': async (path) =>
    raw(stack, path, { padding: 'x'.repeat(4096) }, { 'x-api-key': (await companyWithKey(stack)).apiKey }),
  '415': async (path) =>
    fetch(`${stack.gatewayUrl}${path}`, {
      method: 'POST',
      headers: { 'x-api-key': (await companyWithKey(stack)).apiKey, 'content-type': 'text/plain' },
      body: 'hello',
    }),
  '422': async (path) =>
    raw(stack, path, invalid[path], { 'x-api-key': (await companyWithKey(stack)).apiKey }),
  '429': async (path) => {
    const { apiKey } = await companyWithKey(stack);
    let response = await raw(stack, path, bodies[path], { 'x-api-key': apiKey });
    for (let i = 0; i < 5 && response.status !== 429; i++)
      response = await raw(stack, path, bodies[path], { 'x-api-key': apiKey });
    return response;
  },
  '500': async (path) => {
    const { apiKey } = await companyWithKey(broken);
    // The gateway's tables disappear from under it (the registry's stay).
    const admin = new pg.Client({ connectionString: broken.databaseUrl });
    await admin.connect();
    try {
      await admin.query('drop schema if exists gateway cascade');
    } finally {
      await admin.end();
    }
    const key: Record<string, string> = path === BATCH ? {} : { 'idempotency-key': randomUUID() };
    return raw(broken, path, bodies[path], { 'x-api-key': apiKey, ...key });
  },
  '503': async (path) =>
    raw(noRegistry, path, bodies[path], { 'x-api-key': 'mds_000000000000_' + 'A'.repeat(43) }),
};

/** A message of the key's company, once the read model has it (a moment after its 202). */
async function readableMessage(apiKey: string): Promise<string> {
  const sent = await raw(stack, '/api/v1/send', bodies['/api/v1/send'], { 'x-api-key': apiKey });
  const { event_id: eventId } = (await sent.json()) as { event_id: string };
  await eventually('the message in the read model', async () =>
    (await read(stack, eventId, { 'x-api-key': apiKey })).status === 200 ? true : undefined,
  );
  // The send took the key's one request a second (a cancel counts as a send).
  await sleep(1_100);
  return eventId;
}

// POST /api/v1/cancel names a message of the caller's company: the statuses that depend on it, produced for it.
const cancelProducers: Record<string, Produce> = {
  ...producers,
  '202': async () => {
    const { apiKey } = await companyWithKey(stack);
    return raw(stack, CANCEL_PATH, { event_id: await readableMessage(apiKey) }, { 'x-api-key': apiKey });
  },
  '404': async () =>
    raw(stack, CANCEL_PATH, bodies[CANCEL_PATH], { 'x-api-key': (await companyWithKey(stack)).apiKey }),
  '409': async () => {
    const { apiKey, companyId } = await companyWithKey(stack);
    const eventId = await readableMessage(apiKey);
    // What a sender publishes once the message ended.
    await publisher.publish([
      {
        topic: topics.message,
        key: eventId,
        record: newEvent<MessageEvent>({
          eventId: randomUUID(),
          occurredAt: new Date(),
          companyId,
          streamId: eventId,
          producer: 'telegram-sender',
          event: {
            $case: 'messageSent',
            value: { botId: 'bot-1', providerMessageId: '9', sentAt: new Date(), attempts: 1 },
          },
        }),
      },
    ]);
    return eventually('the message ended in the read model', async () => {
      const response = await raw(stack, CANCEL_PATH, { event_id: eventId }, { 'x-api-key': apiKey });
      return response.status === 409 ? response : undefined;
    });
  },
};
const producersOf = (path: string) => (path === CANCEL_PATH ? cancelProducers : producers);

const READ_PATH = '/api/v1/events/{event_id}';
const read = (target: TestStack, eventId: string, headers: Record<string, string> = {}) =>
  fetch(`${target.gatewayUrl}/api/v1/events/${eventId}`, { headers });

// GET /api/v1/events/{event_id}: every documented status, produced for real.
const readProducers: Record<string, () => Promise<Response>> = {
  '200': async () => {
    const { apiKey } = await companyWithKey(stack);
    const accepted = (await (
      await raw(stack, '/api/v1/send', bodies['/api/v1/send'], { 'x-api-key': apiKey })
    ).json()) as { event_id: string };
    // The read model follows the log: the id is readable a moment after the 202.
    return eventually('the message in the read model', async () => {
      const response = await read(stack, accepted.event_id, { 'x-api-key': apiKey });
      return response.status === 200 ? response : undefined;
    });
  },
  '401': () => read(stack, randomUUID()),
  '403': async () =>
    read(stack, randomUUID(), { 'x-api-key': (await companyWithKey(stack, 'Scoped', ['send'])).apiKey }),
  '404': async () => read(stack, randomUUID(), { 'x-api-key': (await companyWithKey(stack)).apiKey }),
  '429': async () => {
    const { apiKey } = await companyWithKey(stack);
    let response = await read(stack, randomUUID(), { 'x-api-key': apiKey });
    for (let i = 0; i < 5 && response.status !== 429; i++)
      response = await read(stack, randomUUID(), { 'x-api-key': apiKey });
    return response;
  },
  '500': async () => {
    const { apiKey } = await companyWithKey(broken);
    const admin = new pg.Client({ connectionString: broken.databaseUrl });
    await admin.connect();
    try {
      await admin.query('drop schema if exists gateway cascade');
    } finally {
      await admin.end();
    }
    return read(broken, randomUUID(), { 'x-api-key': apiKey });
  },
  '503': () => read(noRegistry, randomUUID(), { 'x-api-key': 'mds_000000000000_' + 'A'.repeat(43) }),
};

async function expectDocumented(documented: Operation['responses'][string] | undefined, response: Response) {
  expect(documented).toBeDefined();
  const [mediaType, { schema }] = Object.entries(documented!.content!)[0]!;
  expect(response.headers.get('content-type')).toContain(mediaType);
  const body: unknown = await response.json();
  const valid = ajv.validate({ $ref: `openapi.json${schema.$ref}` }, body);
  expect(valid, JSON.stringify(ajv.errors)).toBe(true);
  return body;
}

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 and served with a readable docs page', async () => {
    expect((doc as unknown as { openapi: string }).openapi).toBe('3.1.0');
    const page = await fetch(`${stack.gatewayUrl}/api/v1/docs`);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    for (const path of Object.keys(bodies)) expect(html).toContain(`POST ${path}`);
    expect(html).toContain(`GET ${READ_PATH}`);
  });

  it('documents only statuses this test can produce', () => {
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const known = method === 'get' && path === READ_PATH ? readProducers : producersOf(path);
        if (method === 'post') expect(Object.keys(bodies)).toContain(path);
        else expect(`${method} ${path}`).toBe(`get ${READ_PATH}`);
        for (const status of Object.keys(operation.responses))
          expect(Object.keys(known), `${method} ${path} ${status}`).toContain(status);
      }
    }
  });

  it.each(Object.keys(readProducers))(`GET ${READ_PATH} answers %s as documented`, async (status) => {
    const response = await readProducers[status]!();
    expect(response.status).toBe(Number(status));
    await expectDocumented(doc.paths[READ_PATH]!.get!.responses[status], response);
  });

  const cases = Object.keys(bodies).flatMap((path) =>
    statusesOf(path).map((status) => [path, status] as const),
  );
  it.each(cases)('%s answers %s as documented', async (path, status) => {
    const documented = doc.paths[path]!.post!.responses[status];
    expect(documented, `${status} is documented for ${path}`).toBeDefined();
    const response = await producersOf(path)[status]!(path);
    expect(response.status).toBe(Number(status));
    await expectDocumented(documented, response);
  });
});
