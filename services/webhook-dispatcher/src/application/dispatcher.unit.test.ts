import { cleanText } from '@mds/contracts';
import { createLogger } from '@mds/logging';
import { RegistryError } from '@mds/registry-client';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type {
  Arrival,
  ClaimedDelivery,
  Completion,
  DeliveryStore,
  EndpointDirectory,
  NewDelivery,
  SentAttempt,
  WebhookSender,
} from './ports.js';
import { DEFAULT_POLICY } from '../domain/schedule.js';
import { createDispatcher } from './dispatcher.js';

type ClaimOptions = Parameters<DeliveryStore['claim']>[0];

const delivery = (companyId: string, n: number, endpointId = 'ep_default'): NewDelivery => ({
  webhookId: `msg_${companyId}_${n}${endpointId === 'ep_default' ? '' : `_${endpointId}`}`,
  sourceEventId: `${companyId}-${n}`,
  companyId,
  endpointId,
  kind: 'message.status',
  subjectId: `${companyId}-${n}`,
  body: '{}',
  createdAt: new Date(),
});

/** An in-memory store behind the same port: rows, leases, and claims that bring what the test queued. */
function memoryStore() {
  const rows = new Map<string, NewDelivery & { leaseId: string | null; status: string }>();
  const claims: ClaimOptions[] = [];
  const claimAnswers: ClaimedDelivery[][] = [];
  const completed: Completion[][] = [];
  let refuse: ((c: Completion) => boolean) | undefined;
  const ingested: Arrival[][] = [];
  const store: DeliveryStore = {
    ingest: (arrivals, lease) => {
      ingested.push([...arrivals]);
      const stored = new Set<string>();
      for (const { delivery: d, state } of arrivals) {
        if (
          [...rows.values()].some((r) => r.sourceEventId === d.sourceEventId && r.endpointId === d.endpointId)
        )
          continue;
        rows.set(d.webhookId, {
          ...d,
          leaseId: state.kind === 'leased' ? lease.leaseId : null,
          status: state.kind === 'done' ? state.completion.update.status : 'pending',
        });
        stored.add(d.webhookId);
      }
      return Promise.resolve(stored);
    },
    stored: (ids) =>
      Promise.resolve(
        new Set([...rows.values()].map((r) => r.sourceEventId).filter((id) => ids.includes(id))),
      ),
    claim: (options) => {
      claims.push(options);
      return Promise.resolve(claimAnswers.shift() ?? []);
    },
    complete: (batch) => {
      const bad = batch.find((c) => refuse?.(c));
      if (bad) return Promise.reject(Object.assign(new Error('invalid input'), { code: '22P05' }));
      completed.push([...batch]);
      const stored = new Set<string>();
      for (const c of batch) {
        const row = rows.get(c.claim.webhookId);
        if (row?.leaseId !== c.claim.leaseId) continue;
        row.status = c.update.status;
        row.leaseId = null;
        stored.add(c.claim.webhookId);
      }
      return Promise.resolve(stored);
    },
    moveFailureClocks: () => Promise.resolve(new Map()),
    oldestDue: () => Promise.resolve(null),
  };
  return {
    store,
    rows,
    ingested,
    claims,
    claimAnswers,
    completed,
    refuseWhen: (f: (c: Completion) => boolean) => (refuse = f),
  };
}

const fresh = (...deliveries: NewDelivery[]) =>
  deliveries.map((delivery) => ({ delivery, redelivery: false }));

function harness(
  excerpt: (webhookId: string) => string = () => 'ok',
  answerAtOnce = false,
  endpointUrl = 'https://example.com/hook',
  more: { disabled?: string[]; statusOf?: (webhookId: string) => number; registryAway?: boolean } = {},
) {
  const disabledAsked: { companyId: string; endpointId: string }[] = [];
  const memory = memoryStore();
  const sends = new Map<string, () => void>();
  const sentTo: string[] = [];
  const endpoint = (endpointId: string) => ({
    endpointId,
    url: `${endpointUrl}${endpointId === 'ep_default' ? '' : `/${endpointId}`}`,
    eventTypes: [],
    enabled: !more.disabled?.includes(endpointId),
    rateLimitPerSecond: undefined,
    secrets: [{ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
  });
  const directory: EndpointDirectory = {
    endpoints: () =>
      more.registryAway
        ? Promise.reject(new RegistryError('registry unavailable', { kind: 'unavailable' }))
        : Promise.resolve([endpoint('ep_default'), endpoint('ep_other')]),
    disable: (endpoint) => {
      disabledAsked.push(endpoint);
      return Promise.resolve(true);
    },
  };
  const sender: WebhookSender = {
    send: (url, headers) =>
      new Promise<SentAttempt>((resolve) => {
        sentTo.push(url);
        const answer = () =>
          resolve({
            result: { kind: 'response', status: more.statusOf?.(headers['webhook-id']!) ?? 200 },
            latencyMs: 1,
            responseExcerpt: cleanText(excerpt(headers['webhook-id']!), 2_048),
          });
        sends.set(headers['webhook-id']!, answer);
        if (answerAtOnce) answer();
      }),
    close: () => Promise.resolve(),
  };
  const published: string[] = [];
  const dispatcher = createDispatcher({
    store: memory.store,
    directory,
    sender,
    publisher: {
      publish: (events) => {
        published.push(...events.map((e) => e.key));
        return Promise.resolve();
      },
    },
    logger: createLogger({ service: 'test', level: 'silent' }),
    registry: new Registry(),
    now: () => new Date(),
    random: () => 0.5,
    policy: DEFAULT_POLICY,
    maxInFlight: 10,
    maxInFlightPerEndpoint: 2,
    leaseSeconds: 60,
    pollMs: 60_000,
    disableAfterMs: 3_600_000,
    resultsGatherMs: 5,
    firstAttemptWaitMs: 5,
  });
  const until = async (what: string, ok: () => boolean) => {
    for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 2));
    if (!ok()) throw new Error(`never happened: ${what}`);
  };
  return { ...memory, sends, sentTo, published, dispatcher, until, disabledAsked };
}

describe('notifications from the log', () => {
  it('are attempted at once within their endpoint slots; the rest wait stored for a claim', async () => {
    const { claims, sends, rows, dispatcher, until, completed } = harness();
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    await dispatcher.accept(fresh(delivery('a', 1), delivery('a', 2), delivery('a', 3), delivery('b', 1)));
    await until('three attempts', () => sends.size === 3);
    expect([...sends.keys()].sort()).toEqual(['msg_a_1', 'msg_a_2', 'msg_b_1']);
    expect(rows.get('msg_a_3')!.leaseId).toBeNull();
    // The one left over made the loop claim: a's endpoint has no slot free, so the claim may not take its rows.
    await until('a claim', () => claims.length === 2);
    expect(claims[1]!.fullEndpoints).toEqual([{ companyId: 'a', endpointId: 'ep_default' }]);

    for (const finish of sends.values()) finish();
    await until('results stored together', () => completed.flat().length === 3);
    expect(completed).toHaveLength(1);
    await dispatcher.stop();
  });

  it('that came again are not attempted twice', async () => {
    const { claims, sends, dispatcher, until } = harness();
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    await dispatcher.accept(fresh(delivery('a', 1)));
    await dispatcher.accept(fresh(delivery('a', 1)));
    await until('an attempt', () => sends.size === 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(sends.size).toBe(1);
    sends.get('msg_a_1')!();
    await dispatcher.stop();
  });
});

describe('a notification answered at once', () => {
  it('is stored once, with its result, and attempted once more only if it comes again as new', async () => {
    const { claims, sends, rows, ingested, completed, published, dispatcher, until } = harness(
      () => 'ok',
      true,
    );
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    await dispatcher.accept(fresh(delivery('a', 1)));
    expect(sends.size).toBe(1);
    expect(ingested.flat().map((a) => a.state.kind)).toEqual(['done']);
    expect(rows.get('msg_a_1')).toMatchObject({ status: 'delivered', leaseId: null });
    expect(completed).toEqual([]);
    expect(published).toEqual(['msg_a_1', 'msg_a_1']);
    // Read again after a restart: stored, so not attempted.
    await dispatcher.accept([{ delivery: delivery('a', 1), redelivery: true }]);
    expect(sends.size).toBe(1);
    await dispatcher.stop();
  });
});

describe('an endpoint URL with a query', () => {
  it('is called as configured, and kept in the attempt without its query', async () => {
    const url = 'https://example.com/hook?token=receiver-secret';
    const { claims, sentTo, rows, dispatcher, until, ingested } = harness(() => 'ok', true, url);
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    await dispatcher.accept(fresh(delivery('a', 1)));
    expect(sentTo).toEqual([url]);
    expect(rows.get('msg_a_1')).toMatchObject({ status: 'delivered' });
    const stored = ingested.flat()[0]!.state;
    expect(stored.kind === 'done' && stored.completion.attempt?.url).toBe(
      'https://example.com/hook?[redacted]',
    );
    expect(JSON.stringify(ingested)).not.toContain('receiver-secret');
    await dispatcher.stop();
  });
});

describe('claimed deliveries', () => {
  it('whose endpoint has no slot free wait, and run when a slot is given back', async () => {
    const { claims, claimAnswers, sends, dispatcher, until } = harness();
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    await dispatcher.accept(fresh(delivery('a', 1), delivery('a', 2)));
    await until('two attempts', () => sends.size === 2);
    // A claim that raced those brings one more of a's rows.
    claimAnswers.push([{ ...delivery('a', 9), leaseId: 'l', attempts: 1, manual: false }]);
    dispatcher.poke();
    await until('the claim', () => claims.length === 2);
    await new Promise((r) => setTimeout(r, 20));
    expect(sends.has('msg_a_9')).toBe(false);
    sends.get('msg_a_1')!();
    await until('the waiting one', () => sends.has('msg_a_9'));
    sends.get('msg_a_2')!();
    sends.get('msg_a_9')!();
    await dispatcher.stop();
  });
});

describe('results', () => {
  it('that the database refuses for good are quarantined alone; the others of the batch are stored', async () => {
    const { claims, sends, dispatcher, until, completed, refuseWhen, rows, published } = harness((id) =>
      // What the database refuses for good (text of a kind no clean excerpt is any more, but a row may be).
      id === 'msg_a_1' ? 'refused for good' : 'ok',
    );
    refuseWhen((c) => c.attempt?.responseExcerpt === 'refused for good');
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    await dispatcher.accept(fresh(delivery('a', 1), delivery('b', 1), delivery('c', 1)));
    await until('three attempts', () => sends.size === 3);
    for (const finish of sends.values()) finish();
    await until('all stored', () => [...rows.values()].every((r) => r.status === 'delivered'));
    const quarantined = completed.flat().find((c) => c.claim.webhookId === 'msg_a_1')!;
    expect(quarantined.attempt!.responseExcerpt).toBe('');
    expect(quarantined.update.lastError).toMatch(/could not be stored/);
    expect(new Set(published)).toEqual(new Set(['msg_a_1', 'msg_b_1', 'msg_c_1']));
    expect(dispatcher.healthy()).toBe(true);
    await dispatcher.stop();
  });
});

describe('the endpoints of one company', () => {
  it('each have their own slots: a full endpoint leaves the other its own', async () => {
    const { claims, sends, dispatcher, until } = harness();
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    await dispatcher.accept(
      fresh(
        delivery('a', 1),
        delivery('a', 2),
        delivery('a', 3),
        delivery('a', 1, 'ep_other'),
        delivery('a', 2, 'ep_other'),
      ),
    );
    await until('four attempts', () => sends.size === 4);
    expect([...sends.keys()].sort()).toEqual(['msg_a_1', 'msg_a_1_ep_other', 'msg_a_2', 'msg_a_2_ep_other']);
    await until('a claim', () => claims.length === 2);
    expect(claims[1]!.fullEndpoints).toEqual([
      { companyId: 'a', endpointId: 'ep_default' },
      { companyId: 'a', endpointId: 'ep_other' },
    ]);
    for (const finish of sends.values()) finish();
    await dispatcher.stop();
  });
});

describe('an endpoint that is off or gone', () => {
  it("disabled: its delivery fails at once unsent, while the company's other endpoint is sent its own", async () => {
    const { claims, sentTo, rows, dispatcher, until } = harness(() => 'ok', true, undefined, {
      disabled: ['ep_default'],
    });
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    await dispatcher.accept(fresh(delivery('a', 1), delivery('a', 1, 'ep_other')));
    expect(sentTo).toEqual(['https://example.com/hook/ep_other']);
    expect(rows.get('msg_a_1')).toMatchObject({ status: 'failed' });
    expect(rows.get('msg_a_1_ep_other')).toMatchObject({ status: 'delivered' });
    await dispatcher.stop();
  });

  it('answering 410: only that endpoint is disabled in the registry', async () => {
    const { claims, dispatcher, until, disabledAsked } = harness(() => 'gone', true, undefined, {
      statusOf: (id) => (id.endsWith('ep_other') ? 410 : 200),
    });
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    await dispatcher.accept(fresh(delivery('a', 1), delivery('a', 1, 'ep_other')));
    await until('the disable', () => disabledAsked.length === 1);
    expect(disabledAsked).toEqual([{ companyId: 'a', endpointId: 'ep_other' }]);
    await dispatcher.stop();
  });
});

describe('a claimed delivery', () => {
  it('still waiting for a slot when the dispatcher stops is handed back due now, unattempted', async () => {
    const { claims, claimAnswers, sends, dispatcher, until, completed } = harness();
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    await dispatcher.accept(fresh(delivery('a', 1), delivery('a', 2)));
    await until('two attempts', () => sends.size === 2);
    claimAnswers.push([{ ...delivery('a', 9), leaseId: 'l', attempts: 3, manual: true }]);
    dispatcher.poke();
    await until('the claim', () => claims.length === 2);
    const before = Date.now();
    const stopping = dispatcher.stop();
    await new Promise((r) => setTimeout(r, 20));
    for (const finish of sends.values()) finish();
    await stopping;
    expect(sends.has('msg_a_9')).toBe(false);
    const handedBack = completed.flat().find((c) => c.claim.webhookId === 'msg_a_9')!;
    expect(handedBack.attempt).toBeUndefined();
    expect(handedBack).toMatchObject({
      events: [],
      update: { status: 'pending', attempts: 3, manual: true, finishedAt: null },
    });
    expect(handedBack.update.nextAttemptAt!.getTime()).toBeGreaterThanOrEqual(before);
    expect(handedBack.update.nextAttemptAt!.getTime()).toBeLessThanOrEqual(Date.now());
  });

  it('whose endpoints the registry cannot give is deferred: no request, no attempt counted, still manual', async () => {
    const { claims, claimAnswers, sentTo, dispatcher, until, completed, published } = harness(
      () => 'ok',
      true,
      undefined,
      { registryAway: true },
    );
    dispatcher.start();
    await until('the idle claim', () => claims.length === 1);
    claimAnswers.push([{ ...delivery('a', 9), leaseId: 'l', attempts: 3, manual: true }]);
    const before = Date.now();
    dispatcher.poke();
    await until('a result', () => completed.flat().length === 1);
    const [deferred] = completed.flat();
    expect(sentTo).toEqual([]);
    expect(published).toEqual([]);
    expect(deferred!.attempt).toBeUndefined();
    expect(deferred).toMatchObject({
      update: { status: 'pending', attempts: 3, manual: true, lastStatusCode: null, lastError: null },
    });
    const wait = deferred!.update.nextAttemptAt!.getTime() - before;
    expect(wait).toBeGreaterThanOrEqual(5_000);
    expect(wait).toBeLessThan(5_000 + 1_000);
    await dispatcher.stop();
  });
});
