import { createLogger } from '@mds/logging';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { ClaimedDelivery, DeliveryStore } from '../adapters/db/store.js';
import type { SentAttempt, WebhookSender } from '../adapters/http-sender.js';
import type { EndpointDirectory } from '../adapters/registry.js';
import { DEFAULT_POLICY } from '../domain/schedule.js';
import { createDispatcher } from './dispatcher.js';

type ClaimOptions = Parameters<DeliveryStore['claim']>[0];

/** A claim the test answers when it likes, with what it asked for. */
interface HeldClaim {
  options: ClaimOptions;
  answer(rows: ClaimedDelivery[]): void;
}

const row = (companyId: string, n: number): ClaimedDelivery => ({
  webhookId: `msg_${companyId}_${n}`,
  leaseId: 'lease',
  sourceEventId: `${companyId}-${n}`,
  companyId,
  kind: 'message.status',
  subjectId: `${companyId}-${n}`,
  body: '{}',
  attempts: 0,
  manual: false,
});

function harness() {
  const claims: HeldClaim[] = [];
  const sends = new Map<string, () => void>();
  const store = {
    claim: (options: ClaimOptions) =>
      new Promise<ClaimedDelivery[]>((resolve) => claims.push({ options, answer: resolve })),
    complete: (batch: never[]) => Promise.resolve({ stored: batch, failingSince: new Map<string, Date>() }),
    oldestDue: () => Promise.resolve(null),
  } as unknown as DeliveryStore;
  const directory: EndpointDirectory = {
    endpoint: () =>
      Promise.resolve({
        url: 'https://example.com/hook',
        enabled: true,
        secrets: [{ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
      }),
    disable: () => Promise.resolve(false),
    close: () => undefined,
  };
  const sender: WebhookSender = {
    send: (_url, headers) =>
      new Promise<SentAttempt>((resolve) =>
        sends.set(headers['webhook-id']!, () =>
          resolve({ result: { kind: 'response', status: 200 }, latencyMs: 1, responseExcerpt: '' }),
        ),
      ),
    close: () => Promise.resolve(),
  };
  const dispatcher = createDispatcher({
    store,
    directory,
    sender,
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
  });
  const until = async (what: string, ok: () => boolean) => {
    for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 2));
    if (!ok()) throw new Error(`never happened: ${what}`);
  };
  return { claims, sends, dispatcher, until };
}

describe('claims alongside a running claim', () => {
  it('take only the slots freed meanwhile, less what the running claim was promised', async () => {
    const { claims, sends, dispatcher, until } = harness();
    dispatcher.start();
    await until('first claim', () => claims.length === 1);
    claims[0]!.answer([row('a', 1), row('a', 2), row('b', 1)]);
    await until('sending', () => sends.size === 3);

    // a finishes one: the main claim asks with a's one free slot and is held.
    sends.get('msg_a_1')!();
    await until('second claim', () => claims.length === 2);
    const main = claims[1]!.options;
    expect(main.onlyCompanies).toBeUndefined();
    expect(main.freeSlots('a')).toBe(1);
    expect(main.freeSlots('b')).toBe(1);

    // While it is held, a and b finish their last: a has 2 free, 1 of them promised to the main claim.
    sends.get('msg_a_2')!();
    sends.get('msg_b_1')!();
    await until('a claim alongside', () => claims.length === 3);
    const side = claims[2]!.options;
    expect(side.onlyCompanies?.sort()).toEqual(['a', 'b']);
    expect(side.freeSlots('a')).toBe(1);
    expect(side.freeSlots('b')).toBe(1);
    expect(side.defaultSlots).toBe(0);
    expect(side.limit).toBe(2);

    // No third claim at once; once both answer, the next main claim counts what they started.
    claims[2]!.answer([row('a', 3)]);
    claims[1]!.answer([row('a', 4), row('c', 1)]);
    await until('fourth claim', () => claims.length === 4);
    const next = claims[3]!.options;
    expect(next.fullCompanies).toEqual(['a']);
    expect(next.freeSlots('c')).toBe(1);
    for (const release of sends.values()) release();
    claims[3]!.answer([]);
    await dispatcher.stop();
  });
});
