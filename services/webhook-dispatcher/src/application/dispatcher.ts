import type { EventPublisher } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import type { Registry } from 'prom-client';
import type { RetryPolicy } from '../domain/schedule.js';
import { Arrivals } from './arrivals.js';
import { ClaimLoop } from './claims.js';
import { createFailureClocks } from './failure-clocks.js';
import { dispatcherGauges, dispatcherMetrics } from './metrics.js';
import { createPacer } from './pacing.js';
import type {
  ClaimedDelivery,
  Completion,
  DeliveryStore,
  EndpointDirectory,
  NewDelivery,
  WebhookSender,
} from './ports.js';
import { ResultWriter } from './results.js';
import { Slots } from './slots.js';
import { WakeUps } from './wake.js';
import { Workers } from './workers.js';

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

type Metrics = ReturnType<typeof dispatcherMetrics>;

/** Where attempts go: slots, and the ports an attempt reads, signs and POSTs through. */
function workersOf(o: DispatcherOptions, logger: Logger, metrics: Metrics): Workers {
  return new Workers(new Slots(o.maxInFlight, o.maxInFlightPerEndpoint), {
    directory: o.directory,
    sender: o.sender,
    pacer: createPacer(),
    logger,
    now: o.now,
    random: o.random,
    policy: o.policy,
    registryRetryMs: o.registryRetryMs ?? 5_000,
    onAttempt: (made) => metrics.attempted(made),
  });
}

/**
 * What follows a batch of stored results, whichever way they came: the claim loop wakes when the earliest
 * retry is due, and the endpoints' failure clocks move (disabling what must be).
 */
function afterStoredOf(o: DispatcherOptions, logger: Logger, metrics: Metrics, wakeUps: WakeUps) {
  const clocks = createFailureClocks({
    store: o.store,
    directory: o.directory,
    logger,
    now: o.now,
    disableAfterMs: o.disableAfterMs,
    onDisabled: (why) => metrics.disabled.inc({ reason: why }),
  });
  return async (stored: Completion[]): Promise<void> => {
    for (const c of stored) if (c.update.nextAttemptAt) wakeUps.at(c.update.nextAttemptAt);
    await clocks.record(stored);
  };
}

/** Claimed rows: each attempted within the slots and its result stored; the lease runs out if anything throws. */
function claimedDeliveries(workers: Workers, results: ResultWriter, logger: Logger) {
  const delivering = new Set<Promise<void>>();
  return {
    deliver(claim: ClaimedDelivery): void {
      const done = workers
        .take(claim)
        .then((completion) => results.add(completion))
        .catch((error: unknown) =>
          logger.error({ err: error, webhookId: claim.webhookId }, 'delivery failed unexpectedly'),
        )
        .finally(() => delivering.delete(done));
      delivering.add(done);
    },
    /** Resolves once every row delivered so far has its result stored. */
    settled: () => Promise.allSettled([...delivering]),
  };
}

/** Results stored in batches; after each, the next retry's wake-up is set and the failure clocks move. */
function resultWriterOf(o: DispatcherOptions, logger: Logger, metrics: Metrics, wakeUps: WakeUps) {
  const afterStored = afterStoredOf(o, logger, metrics, wakeUps);
  const results = new ResultWriter({
    store: o.store,
    publisher: o.publisher,
    logger,
    gatherMs: o.resultsGatherMs ?? 50,
    onBatch: (n) => metrics.storeSize.observe(n),
    onQuarantined: () => metrics.quarantined.inc(),
    onStored: afterStored,
  });
  return { results, afterStored };
}

/** The two ways deliveries come in: new from the log (Arrivals), due from the database (ClaimLoop). */
function intakeOf(
  o: DispatcherOptions,
  p: ReturnType<typeof resultWriterOf> & { logger: Logger; metrics: Metrics; wakeUps: WakeUps },
  workers: Workers,
  running: () => boolean,
) {
  const { results, afterStored, logger, metrics, wakeUps } = p;
  const claimed = claimedDeliveries(workers, results, logger);
  const claims = new ClaimLoop({
    store: o.store,
    workers,
    wakeUps,
    logger,
    now: o.now,
    leaseSeconds: o.leaseSeconds,
    pollMs: o.pollMs,
    // While results cannot be stored, taking more would only let their leases run out.
    mayClaim: () => running() && results.healthy() && results.pending() < o.maxInFlight,
    deliver: (claim) => claimed.deliver(claim),
    onClaim: (n) => metrics.claimSize.observe(n),
  });
  const arrivals = new Arrivals({
    store: o.store,
    publisher: o.publisher,
    workers,
    results,
    wakeUps,
    logger,
    leaseSeconds: o.leaseSeconds,
    firstAttemptWaitMs: o.firstAttemptWaitMs ?? 50,
    mayRun: () => running() && results.healthy(),
    afterStored: (stored) => {
      metrics.storeSize.observe(stored.length);
      return afterStored(stored);
    },
  });
  return { claimed, claims, arrivals };
}

/**
 * The delivery workers of one replica, wired once: a notification read from the log is stored leased to this
 * replica and POSTed at once when its endpoint has a free slot (Arrivals); retries, resends and notifications
 * that waited for a slot are claimed from the database, skipping rows other replicas hold (ClaimLoop). Both
 * go into an attempt one way (Workers, within the slots), and results are stored in batches (ResultWriter),
 * after which the next retry's wake-up is set and the failure clocks move.
 */
export function createDispatcher(o: DispatcherOptions): Dispatcher {
  const logger = o.logger.child({ component: 'dispatcher' });
  const metrics = dispatcherMetrics(o.registry);
  const wakeUps = new WakeUps(o.now);
  const workers = workersOf(o, logger, metrics);
  const stored = resultWriterOf(o, logger, metrics, wakeUps);
  const { results } = stored;
  let running = false;
  const intake = intakeOf(o, { ...stored, logger, metrics, wakeUps }, workers, () => running);
  const { claimed, claims, arrivals } = intake;
  const inFlight = () => workers.inFlight();
  dispatcherGauges({ registry: o.registry, store: o.store, inFlight, now: o.now, logger });
  return {
    start() {
      running = true;
      claims.start();
    },
    accept: (deliveries) => arrivals.accept(deliveries),
    poke: () => wakeUps.now(),
    async stop() {
      running = false;
      await claims.stop();
      // Rows still waiting for a slot go back due now; what is under way ends and is stored.
      await workers.stop(o.now());
      await claimed.settled();
      await results.stop();
      wakeUps.stop();
    },
    healthy: () => running && claims.healthy() && results.healthy(),
    inFlight,
  };
}
