import type { Logger } from '@mds/logging';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { AttemptMade } from '../domain/delivery.js';
import type { DeliveryStore } from './ports.js';

const BATCH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500];

/** The dispatcher's metrics (names and help as operators' dashboards know them). */
export function dispatcherMetrics(registry: Registry) {
  const attempts = new Counter({
    name: 'mds_webhook_attempts_total',
    help: 'Webhook attempts by outcome',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'mds_webhook_attempt_seconds',
    help: 'Duration of webhook attempts',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [registry],
  });
  return {
    /** An attempt made (a deferral is none); one that sent nothing has no duration. */
    attempted({ decision, answer }: AttemptMade): void {
      attempts.inc({ outcome: decision.outcome });
      if (answer.result.kind !== 'no_endpoint') latency.observe(answer.latencyMs / 1000);
    },
    disabled: new Counter({
      name: 'mds_webhook_endpoints_disabled_total',
      help: 'Webhook endpoints disabled in the registry, by reason (gone: 410 or webhook-delivery: disable; failing: every attempt to it failed for the disable window)',
      labelNames: ['reason'],
      registers: [registry],
    }),
    claimSize: new Histogram({
      name: 'mds_webhook_claim_batch_size',
      help: 'Deliveries taken by one claim of due deliveries (one statement); claims that found nothing count too',
      buckets: BATCH_BUCKETS,
      registers: [registry],
    }),
    storeSize: new Histogram({
      name: 'mds_webhook_store_batch_size',
      help: 'Attempt results stored by one statement',
      buckets: BATCH_BUCKETS,
      registers: [registry],
    }),
    quarantined: new Counter({
      name: 'mds_webhook_results_quarantined_total',
      help: 'Attempt results the database refused whatever the retry, stored without their details',
      registers: [registry],
    }),
  };
}

/** The gauges read at each scrape: the oldest due delivery nobody works on, and this replica's attempts. */
export function dispatcherGauges(o: {
  registry: Registry;
  store: Pick<DeliveryStore, 'oldestDue'>;
  inFlight: () => number;
  now: () => Date;
  logger: Logger;
}): void {
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
        o.logger.warn({ err: error }, 'could not measure the oldest due delivery');
      }
    },
  });
  new Gauge({
    name: 'mds_webhook_in_flight',
    help: 'Deliveries this replica is attempting now',
    registers: [o.registry],
    collect() {
      this.set(o.inFlight());
    },
  });
}
