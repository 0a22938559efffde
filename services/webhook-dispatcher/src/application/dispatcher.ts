import { AttemptOutcome, newEvent, topics, derivedEventId, type WebhookEvent } from '@mds/contracts';
import type { OutgoingEvent } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import {
  decideAfterAttempt,
  describeResult,
  shouldDisableEndpoint,
  type AttemptDecision,
  type RetryPolicy,
} from '../domain/schedule.js';
import type { ClaimedDelivery, Completion, DeliveryStore } from '../adapters/db/store.js';
import type { SentAttempt, WebhookSender } from '../adapters/http-sender.js';
import { RegistryUnavailableError, type EndpointDirectory } from '../adapters/registry.js';
import { webhookHeaders } from '../adapters/signing.js';

export const PRODUCER = 'webhook-dispatcher';

export interface DispatcherOptions {
  store: DeliveryStore;
  directory: EndpointDirectory;
  sender: WebhookSender;
  logger: Logger;
  registry: Registry;
  /** The schedule's clock (injectable: tests move it forward). Lease expiry uses the database's own clock. */
  now: () => Date;
  random: () => number;
  policy: RetryPolicy;
  /** Deliveries in flight in this replica at most. */
  maxInFlight: number;
  /** Deliveries in flight to one company's endpoint in this replica at most. */
  maxInFlightPerEndpoint: number;
  leaseSeconds: number;
  pollMs: number;
  disableAfterMs: number;
  /** How long to wait before asking again when the registry cannot say where to deliver. */
  registryRetryMs?: number;
  /** Called after a batch of results is stored (their events are in the outbox). */
  onStored?: () => void;
}

export interface Dispatcher {
  start(): void;
  /** Look for due deliveries now (new ones were stored, or a resend asked for). */
  poke(): void;
  stop(): Promise<void>;
  healthy(): boolean;
  inFlight(): number;
}

const OUTCOME = {
  succeeded: AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED,
  retryable: AttemptOutcome.ATTEMPT_OUTCOME_RETRYABLE,
  gone: AttemptOutcome.ATTEMPT_OUTCOME_GONE,
  gave_up: AttemptOutcome.ATTEMPT_OUTCOME_GAVE_UP,
} as const;

const EVENT_EXCERPT_CHARS = 512;

function events(
  claim: ClaimedDelivery,
  attempt: number,
  url: string,
  sent: SentAttempt,
  decision: AttemptDecision,
  at: Date,
): OutgoingEvent[] {
  const record = (purpose: string, event: NonNullable<WebhookEvent['event']>): OutgoingEvent => ({
    topic: topics.webhook,
    key: claim.webhookId,
    record: newEvent<WebhookEvent>({
      eventId: derivedEventId(claim.sourceEventId, `${purpose}/${attempt}`),
      occurredAt: at,
      companyId: claim.companyId,
      streamId: claim.webhookId,
      correlationId: claim.subjectId,
      causationId: claim.sourceEventId,
      producer: PRODUCER,
      event,
    }),
  });
  const error = decision.outcome === 'succeeded' ? '' : decision.reason;
  const out = [
    record('webhook-attempted', {
      $case: 'webhookAttempted',
      value: {
        kind: claim.kind,
        subjectId: claim.subjectId,
        attempt,
        url,
        statusCode: sent.result.kind === 'response' ? sent.result.status : 0,
        latencyMs: sent.latencyMs,
        outcome: OUTCOME[decision.outcome],
        error,
        responseExcerpt: sent.responseExcerpt.slice(0, EVENT_EXCERPT_CHARS),
        nextAttemptAt: decision.outcome === 'retryable' ? decision.nextAttemptAt : undefined,
      },
    }),
  ];
  if (decision.outcome === 'succeeded') {
    out.push(
      record('webhook-delivered', {
        $case: 'webhookDelivered',
        value: { kind: claim.kind, subjectId: claim.subjectId, attempts: attempt },
      }),
    );
  } else if (decision.outcome !== 'retryable') {
    out.push(
      record('webhook-abandoned', {
        $case: 'webhookDeliveryAbandoned',
        value: { kind: claim.kind, subjectId: claim.subjectId, attempts: attempt, lastError: error },
      }),
    );
  }
  return out;
}

/**
 * The delivery workers of one replica: claim due rows (skipping rows other replicas hold), POST them with
 * per-endpoint and global bounds on concurrency, decide what follows each attempt, and store results in
 * batches (row, attempt log, events, failure clock in one transaction).
 */
export function createDispatcher(o: DispatcherOptions): Dispatcher {
  const log = o.logger.child({ component: 'dispatcher' });
  const attemptsTotal = new Counter({
    name: 'mds_webhook_attempts_total',
    help: 'Webhook attempts by outcome',
    labelNames: ['outcome'],
    registers: [o.registry],
  });
  const latency = new Histogram({
    name: 'mds_webhook_attempt_seconds',
    help: 'Duration of webhook attempts',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [o.registry],
  });
  const endpointsDisabled = new Counter({
    name: 'mds_webhook_endpoints_disabled_total',
    help: 'Webhook endpoints disabled in the registry, by reason (gone: 410 or webhook-delivery: disable; failing: every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS)',
    labelNames: ['reason'],
    registers: [o.registry],
  });
  const batchBuckets = [1, 2, 5, 10, 20, 50, 100, 200, 500];
  const claimSize = new Histogram({
    name: 'mds_webhook_claim_batch_size',
    help: 'Deliveries taken by one claim (one statement); claims that found nothing count too',
    buckets: batchBuckets,
    registers: [o.registry],
  });
  const storeSize = new Histogram({
    name: 'mds_webhook_store_batch_size',
    help: 'Attempt results stored by one statement (rows, attempt log, events, failure clocks)',
    buckets: batchBuckets,
    registers: [o.registry],
  });
  new Gauge({
    name: 'mds_webhook_oldest_due_seconds',
    help: 'How long the longest-waiting due delivery has been due (0 when none is); the same on every replica',
    registers: [o.registry],
    async collect() {
      try {
        const due = await o.store.oldestDue(o.now());
        this.set(due ? Math.max(0, (o.now().getTime() - due.getTime()) / 1000) : 0);
      } catch (error) {
        // The scrape goes on with the last value; /readyz reports the database.
        log.warn({ err: error }, 'could not measure the oldest due delivery');
      }
    },
  });
  const perCompany = new Map<string, number>();
  let inFlight = 0;
  new Gauge({
    name: 'mds_webhook_in_flight',
    help: 'Deliveries this replica is attempting now',
    registers: [o.registry],
    collect() {
      this.set(inFlight);
    },
  });
  let running = false;
  let lastPassOk = true;
  let wake: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  let flushing: Promise<void> | undefined;
  const queue: Completion[] = [];
  const deliveries = new Set<Promise<void>>();
  const registryRetryMs = o.registryRetryMs ?? 5_000;

  // A poke while the loop is busy claiming is remembered, not lost: the loop claims again before it sleeps.
  let poked = false;
  const poke = () => {
    poked = true;
    wake?.();
  };
  let pokeSoon: NodeJS.Timeout | undefined;
  /** Deliveries finishing within a few milliseconds of each other lead to one claim, not one each. */
  const pokeShortly = () => {
    pokeSoon ??= setTimeout(() => {
      pokeSoon = undefined;
      poke();
      claimAlongside();
    }, 5);
  };

  async function flush(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, 500);
      for (let delay = 100; ; delay = Math.min(delay * 2, 5_000)) {
        try {
          const { stored, failingSince } = await o.store.complete(batch);
          storeSize.observe(batch.length);
          lastPassOk = true;
          o.onStored?.();
          await afterStored(stored, failingSince);
          break;
        } catch (error) {
          lastPassOk = false;
          log.error({ err: error, results: batch.length }, 'could not store attempt results; retrying');
          await new Promise((r) => setTimeout(r, delay));
        }
      }
    }
  }

  function scheduleFlush(): void {
    flushing ??= flush().finally(() => {
      flushing = undefined;
      if (queue.length > 0) scheduleFlush();
    });
  }

  async function afterStored(stored: Completion[], failingSince: Map<string, Date>): Promise<void> {
    const disable = new Map<string, { reason: string; why: 'gone' | 'failing' }>();
    for (const c of stored) {
      if (c.attempt?.outcome === 'gone')
        disable.set(c.claim.companyId, { reason: `${c.attempt.error} from ${c.attempt.url}`, why: 'gone' });
    }
    const at = o.now();
    for (const [companyId, since] of failingSince) {
      if (shouldDisableEndpoint(since, at, o.disableAfterMs)) {
        disable.set(companyId, {
          reason: `every attempt failed since ${since.toISOString()}`,
          why: 'failing',
        });
      }
    }
    for (const [companyId, { reason, why }] of disable) {
      try {
        // Counted once per endpoint: a later batch asks again while the registry already has it disabled.
        if (await o.directory.disable(companyId, reason)) endpointsDisabled.inc({ reason: why });
        log.warn({ companyId, reason }, 'disabled a webhook endpoint');
      } catch (error) {
        // The next failure asks again.
        log.error({ err: error, companyId }, 'could not disable a webhook endpoint');
      }
    }
  }

  async function deliver(claim: ClaimedDelivery): Promise<Completion> {
    const attempt = claim.attempts + 1;
    const trigger = claim.manual ? 'manual' : 'scheduled';
    let endpoint;
    try {
      endpoint = await o.directory.endpoint(claim.companyId);
    } catch (error) {
      if (!(error instanceof RegistryUnavailableError)) throw error;
      log.warn({ err: error, webhookId: claim.webhookId }, 'registry unavailable; delivery deferred');
      return {
        claim,
        update: {
          status: 'pending',
          attempts: claim.attempts,
          nextAttemptAt: new Date(o.now().getTime() + registryRetryMs),
          lastStatusCode: null,
          lastError: null,
          finishedAt: null,
        },
        events: [],
      };
    }
    const startedAt = o.now();
    const secrets = (endpoint?.secrets ?? [])
      .filter((s) => !s.expiresAt || s.expiresAt > startedAt)
      .map((s) => s.secret);
    let sent: SentAttempt;
    if (!endpoint || !endpoint.enabled || secrets.length === 0) {
      const error = !endpoint
        ? 'the company has no webhook endpoint'
        : !endpoint.enabled
          ? 'the webhook endpoint is disabled'
          : 'the webhook endpoint has no signing secret';
      sent = { result: { kind: 'no_endpoint', error }, latencyMs: 0, responseExcerpt: '' };
    } else {
      const headers = webhookHeaders({
        webhookId: claim.webhookId,
        // The attempt's wall-clock time: receivers check it against theirs (±5 min).
        timestampSeconds: Math.floor(Date.now() / 1000),
        body: claim.body,
        secrets,
      });
      sent = await o.sender.send(endpoint.url, headers, claim.body, startedAt);
      latency.observe(sent.latencyMs / 1000);
    }
    const at = o.now();
    const decision = decideAfterAttempt({
      attempt,
      manual: claim.manual,
      result: sent.result,
      now: at,
      random: o.random(),
      policy: o.policy,
    });
    attemptsTotal.inc({ outcome: decision.outcome });
    const url = endpoint?.url ?? '';
    const statusCode = sent.result.kind === 'response' ? sent.result.status : 0;
    const error = decision.outcome === 'succeeded' ? null : decision.reason;
    const reached =
      sent.result.kind === 'response' || sent.result.kind === 'timeout' || sent.result.kind === 'network';
    return {
      claim,
      update: {
        status:
          decision.outcome === 'succeeded'
            ? 'delivered'
            : decision.outcome === 'retryable'
              ? 'pending'
              : 'failed',
        attempts: attempt,
        nextAttemptAt: decision.outcome === 'retryable' ? decision.nextAttemptAt : null,
        lastStatusCode: statusCode,
        lastError: error ?? describeResult(sent.result),
        finishedAt: decision.outcome === 'retryable' ? null : at,
      },
      attempt: {
        webhookId: claim.webhookId,
        attempt,
        trigger,
        url,
        statusCode,
        latencyMs: sent.latencyMs,
        outcome: decision.outcome,
        error,
        responseExcerpt: sent.responseExcerpt,
        nextAttemptAt: decision.outcome === 'retryable' ? decision.nextAttemptAt : null,
        attemptedAt: startedAt,
      },
      events: events(claim, attempt, url, sent, decision, at),
      ...(reached ? { health: { succeeded: decision.outcome === 'succeeded', at } } : {}),
    };
  }

  function start(claim: ClaimedDelivery): void {
    inFlight++;
    perCompany.set(claim.companyId, (perCompany.get(claim.companyId) ?? 0) + 1);
    const done = deliver(claim)
      .then((completion) => {
        queue.push(completion);
        scheduleFlush();
      })
      .catch((error: unknown) => {
        // The lease runs out and the delivery is tried again.
        log.error({ err: error, webhookId: claim.webhookId }, 'delivery failed unexpectedly');
      })
      .finally(() => {
        inFlight--;
        const left = (perCompany.get(claim.companyId) ?? 1) - 1;
        if (left > 0) perCompany.set(claim.companyId, left);
        else perCompany.delete(claim.companyId);
        deliveries.delete(done);
        pokeShortly();
      });
    deliveries.add(done);
  }

  const cap = o.maxInFlightPerEndpoint;
  interface Grant {
    asked: number;
    /** Slots promised per company; the main claim also promised `cap` to every company absent here. */
    slots: Map<string, number>;
  }
  // Slots promised to claims in progress, whose rows are not in flight yet: the main loop's claim and at most
  // one claim alongside it (taking slots freed meanwhile), so slots do not stay empty for a whole claim.
  let mainGrant: Grant | undefined;
  let sideGrant: Grant | undefined;
  let sideClaim: Promise<void> | undefined;

  /** While the main claim runs, claims the slots freed since, of companies the main claim knew as busy only. */
  function claimAlongside(): void {
    const main = mainGrant;
    if (!running || !main || sideClaim) return;
    const free = o.maxInFlight - inFlight - main.asked;
    const slots = new Map<string, number>();
    for (const companyId of new Set([...perCompany.keys(), ...main.slots.keys()])) {
      const left = cap - (perCompany.get(companyId) ?? 0) - (main.slots.get(companyId) ?? cap);
      if (left > 0) slots.set(companyId, left);
    }
    const asked = Math.min(
      free,
      200,
      [...slots.values()].reduce((a, b) => a + b, 0),
    );
    if (asked <= 0) return;
    sideGrant = { asked, slots };
    sideClaim = o.store
      .claim({
        now: o.now(),
        limit: asked,
        leaseSeconds: o.leaseSeconds,
        fullCompanies: [],
        freeSlots: (companyId) => slots.get(companyId) ?? 0,
        defaultSlots: 0,
        busyCompanies: [...slots.keys()],
        onlyCompanies: [...slots.keys()],
      })
      .then(
        (rows) => {
          sideGrant = undefined;
          claimSize.observe(rows.length);
          for (const row of rows) start(row);
        },
        (error: unknown) => {
          sideGrant = undefined;
          log.warn({ err: error }, 'could not claim due deliveries alongside; the next claim takes them');
        },
      )
      .finally(() => {
        sideClaim = undefined;
      });
  }

  async function run(): Promise<void> {
    while (running) {
      poked = false;
      const side = sideGrant;
      const free = o.maxInFlight - inFlight - (side?.asked ?? 0);
      let claimed = 0;
      let asked = 0;
      if (free > 0) {
        asked = Math.min(free, 200);
        try {
          const busy = [...new Set([...perCompany.keys(), ...(side?.slots.keys() ?? [])])];
          const slots = new Map(
            busy.map((c) => [c, Math.max(0, cap - (perCompany.get(c) ?? 0) - (side?.slots.get(c) ?? 0))]),
          );
          const full = busy.filter((c) => slots.get(c)! <= 0);
          mainGrant = { asked, slots };
          let rows: ClaimedDelivery[];
          try {
            rows = await o.store.claim({
              now: o.now(),
              limit: asked,
              leaseSeconds: o.leaseSeconds,
              fullCompanies: full,
              freeSlots: (companyId) => slots.get(companyId) ?? cap,
              defaultSlots: cap,
              busyCompanies: busy,
            });
          } finally {
            mainGrant = undefined;
          }
          claimSize.observe(rows.length);
          lastPassOk = true;
          claimed = rows.length;
          for (const row of rows) start(row);
        } catch (error) {
          lastPassOk = false;
          log.error({ err: error }, 'could not claim due deliveries; retrying');
        }
      }
      if (running && ((claimed > 0 && claimed === asked) || (poked && lastPassOk && free > 0))) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, o.pollMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  }

  return {
    start() {
      running = true;
      loop = run();
    },
    poke,
    async stop() {
      running = false;
      clearTimeout(pokeSoon);
      poke();
      await loop;
      await sideClaim;
      await Promise.allSettled([...deliveries]);
      while (flushing) await flushing;
    },
    healthy: () => running && lastPassOk,
    inFlight: () => inFlight,
  };
}
