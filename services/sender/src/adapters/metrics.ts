import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { SenderMetrics } from '../application/ports.js';

export function senderMetrics(registry: Registry): SenderMetrics {
  return {
    queued: new Gauge({
      name: 'mds_sender_queued_deliveries',
      help: 'Deliveries held in memory by the bot lanes of this replica (more may wait in the journal)',
      registers: [registry],
    }),
    attempts: new Counter({
      name: 'mds_sender_attempts_total',
      help: 'Provider calls for messages, by classified result (sent, rejected, unauthorized, rate-limited, transient)',
      labelNames: ['result'],
      registers: [registry],
    }),
    outcomes: new Counter({
      name: 'mds_sender_outcomes_total',
      help: 'Messages decided by this replica: sent, the error_code of the failure, or passed_on (a channel of a message with a fallback could not reach the person and it goes on to the next)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    floods: new Counter({
      name: 'mds_sender_flood_waits_total',
      help: 'Flood-control answers (429) from the messenger; should stay 0 when the rates are right',
      registers: [registry],
    }),
    providerSeconds: new Histogram({
      name: 'mds_sender_provider_call_seconds',
      help: 'Duration of sendMessage / POST /messages calls',
      labelNames: ['result'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
      registers: [registry],
    }),
    updates: new Counter({
      name: 'mds_sender_bot_updates_total',
      help: 'Facts read from bots updates and published (started, contact-shared, blocked, unblocked)',
      labelNames: ['kind'],
      registers: [registry],
    }),
    pollFailures: new Counter({
      name: 'mds_sender_update_poll_failures_total',
      help: 'Failed update polls, by kind (conflict, unauthorized, rate-limited, transient)',
      labelNames: ['kind'],
      registers: [registry],
    }),
    polledBots: new Gauge({
      name: 'mds_sender_polled_bots',
      help: 'Bots whose updates this replica is reading',
      registers: [registry],
    }),
  };
}
