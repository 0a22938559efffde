import type { EventPublisher } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { RetryPolicy } from '../domain/schedule.js';
import type {
  ClaimedDelivery,
  DeliveryStore,
  EndpointDirectory,
  NewDelivery,
  WebhookSender,
} from './ports.js';
import { attemptDelivery, type AttemptPorts } from './attempt.js';
import { createArrivals } from './arrivals.js';
import { createClaimLoop } from './claims.js';
import { createFailureClocks } from './failure-clocks.js';
import { createPacer } from './pacing.js';
import { createResultWriter } from './results.js';
import { Slots } from './slots.js';

export interface DispatcherOptions {
  store: DeliveryStore;
  directory: EndpointDirectory;
  sender: WebhookSender;
  publisher: Pick<EventPublisher, 'publish'>;
  logger: Logger;
  registry: Registry;
  /** The schedule's clock (injectable: tests move it forward). Lease expiry uses the database's own clock. */
  now: () => Date;
  random: () => number;
  policy: RetryPolicy;
  /** Deliveries in flight in this replica at most. */
  maxInFlight: number;
  /** Deliveries in flight to one endpoint in this replica at most. */
  maxInFlightPerEndpoint: number;
  leaseSeconds: number;
  pollMs: number;
  disableAfterMs: number;
  /** How long to wait before asking again when the registry cannot say where to deliver. */
  registryRetryMs?: number;
  /** Results arriving within this long are stored by one statement (50 ms). */
  resultsGatherMs?: number;
  /** How long a batch's first attempts are waited for, to store each delivery once with its result (50 ms). */
  firstAttemptWaitMs?: number;
}

export interface Dispatcher {
  start(): void;
  /**
   * New notifications from the log (`redelivery`: read again after a restart or a rebalance): attempted at
   * once by this replica where their endpoint has a free slot, and stored (the rest wait, stored, for a
   * slot). Resolves once each has its row.
   */
  accept(deliveries: readonly { delivery: NewDelivery; redelivery: boolean }[]): Promise<void>;
  /** Look for due deliveries now (a resend or a recover asked for some). */
  poke(): void;
  stop(): Promise<void>;
  healthy(): boolean;
  inFlight(): number;
}

function dispatcherMetrics(registry: Registry) {
  const batchBuckets = [1, 2, 5, 10, 20, 50, 100, 200, 500];
  return {
    attempts: new Counter({
      name: 'mds_webhook_attempts_total',
      help: 'Webhook attempts by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'mds_webhook_attempt_seconds',
      help: 'Duration of webhook attempts',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
      registers: [registry],
    }),
    disabled: new Counter({
      name: 'mds_webhook_endpoints_disabled_total',
      help: 'Webhook endpoints disabled in the registry, by reason (gone: 410 or webhook-delivery: disable; failing: every attempt to it failed for the disable window)',
      labelNames: ['reason'],
      registers: [registry],
    }),
    claimSize: new Histogram({
      name: 'mds_webhook_claim_batch_size',
      help: 'Deliveries taken by one claim of due deliveries (one statement); claims that found nothing count too',
      buckets: batchBuckets,
      registers: [registry],
    }),
    storeSize: new Histogram({
      name: 'mds_webhook_store_batch_size',
      help: 'Attempt results stored by one statement',
      buckets: batchBuckets,
      registers: [registry],
    }),
    quarantined: new Counter({
      name: 'mds_webhook_results_quarantined_total',
      help: 'Attempt results the database refused whatever the retry, stored without their details',
      registers: [registry],
    }),
  };
}

/**
 * The delivery workers of one replica. A notification read from the log is stored leased to this replica
 * and POSTed at once when its endpoint has a free slot; its result is stored with others a moment later.
 * Retries, resends and notifications that waited for a slot are claimed from the database (skipping rows
 * other replicas hold). Per-endpoint and global bounds on concurrency keep one slow endpoint to its slots.
 */
export function createDispatcher(o: DispatcherOptions): Dispatcher {
  const log = o.logger.child({ component: 'dispatcher' });
  const metrics = dispatcherMetrics(o.registry);
  const slots = new Slots(o.maxInFlight, o.maxInFlightPerEndpoint);
  const work = new Set<Promise<void>>();
  let running = false;

  const clocks = createFailureClocks({
    store: o.store,
    directory: o.directory,
    logger: log,
    now: o.now,
    disableAfterMs: o.disableAfterMs,
    onDisabled: (why) => metrics.disabled.inc({ reason: why }),
  });
  const results = createResultWriter({
    store: o.store,
    publisher: o.publisher,
    logger: log,
    gatherMs: o.resultsGatherMs ?? 50,
    onBatch: (n) => metrics.storeSize.observe(n),
    onQuarantined: () => metrics.quarantined.inc(),
    onStored: async (stored) => {
      for (const c of stored) if (c.update.nextAttemptAt) claims.dueAt(c.update.nextAttemptAt);
      await clocks.record(stored);
    },
  });
  const attemptOptions: AttemptPorts = {
    directory: o.directory,
    sender: o.sender,
    pacer: createPacer(),
    logger: log,
    now: o.now,
    random: o.random,
    policy: o.policy,
    registryRetryMs: o.registryRetryMs ?? 5_000,
    onAttempt: ({ decision, answer }) => {
      metrics.attempts.inc({ outcome: decision.outcome });
      if (answer.result.kind !== 'no_endpoint') metrics.latency.observe(answer.latencyMs / 1000);
    },
  };

  /** Attempts a delivery whose slot is taken; the slot is given back as soon as the endpoint answered. */
  function run(claim: ClaimedDelivery): void {
    const done = attemptDelivery(attemptOptions, claim)
      .finally(() => {
        slots.release(claim);
        claims.released(claim);
      })
      .then((completion) => results.add(completion))
      .catch((error: unknown) => {
        // The lease runs out and the delivery is tried again.
        log.error({ err: error, webhookId: claim.webhookId }, 'delivery failed unexpectedly');
      })
      .finally(() => work.delete(done));
    work.add(done);
  }

  const claims = createClaimLoop({
    store: o.store,
    slots,
    logger: log,
    now: o.now,
    leaseSeconds: o.leaseSeconds,
    pollMs: o.pollMs,
    // While results cannot be stored, taking more would only let their leases run out.
    mayClaim: () => running && results.healthy() && results.pending() < o.maxInFlight,
    run,
    onClaim: (n) => metrics.claimSize.observe(n),
  });

  const arrivals = createArrivals({
    store: o.store,
    publisher: o.publisher,
    slots,
    attempt: attemptOptions,
    logger: log,
    leaseSeconds: o.leaseSeconds,
    firstAttemptWaitMs: o.firstAttemptWaitMs ?? 50,
    mayRun: () => running && results.healthy(),
    released: (endpoint) => claims.released(endpoint),
    onStored: async (stored) => {
      metrics.storeSize.observe(stored.length);
      for (const c of stored) if (c.update.nextAttemptAt) claims.dueAt(c.update.nextAttemptAt);
      await clocks.record(stored);
    },
    onLateResult: (completion) => results.add(completion),
    onWaiting: () => claims.poke(),
  });

  new Gauge({
    name: 'mds_webhook_oldest_due_seconds',
    help: 'How long the longest-waiting due delivery nobody works on has been due (0 when none is); the same on every replica',
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
  new Gauge({
    name: 'mds_webhook_in_flight',
    help: 'Deliveries this replica is attempting now',
    registers: [o.registry],
    collect() {
      this.set(slots.inFlight());
    },
  });

  return {
    start() {
      running = true;
      claims.start();
    },
    accept: (deliveries) => arrivals.accept(deliveries),
    poke: () => claims.poke(),
    async stop() {
      running = false;
      await claims.stop();
      await Promise.allSettled([...work, ...arrivals.inFlight()]);
      await results.stop();
    },
    healthy: () => running && claims.healthy() && results.healthy(),
    inFlight: () => slots.inFlight(),
  };
}
