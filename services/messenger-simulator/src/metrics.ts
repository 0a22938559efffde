import { Counter, type Registry } from 'prom-client';

export interface SimulatorMetrics {
  apiCalls: Counter<'messenger' | 'method' | 'status'>;
  updates: Counter<'messenger' | 'type'>;
  webhookPushes: Counter<'messenger' | 'outcome'>;
  inspectedWebhooks: Counter<'verified'>;
}

export function simulatorMetrics(registry: Registry): SimulatorMetrics {
  return {
    apiCalls: new Counter({
      name: 'mds_simulator_api_calls_total',
      help: 'Bot API calls served, by messenger, method and HTTP status',
      labelNames: ['messenger', 'method', 'status'],
      registers: [registry],
    }),
    updates: new Counter({
      name: 'mds_simulator_updates_total',
      help: 'Updates queued for bots, by messenger and update type',
      labelNames: ['messenger', 'type'],
      registers: [registry],
    }),
    webhookPushes: new Counter({
      name: 'mds_simulator_webhook_pushes_total',
      help: 'Webhook push attempts, by messenger and outcome',
      labelNames: ['messenger', 'outcome'],
      registers: [registry],
    }),
    inspectedWebhooks: new Counter({
      name: 'mds_simulator_inspected_webhooks_total',
      help: 'Webhooks the inspector received, by whether their signature verified',
      labelNames: ['verified'],
      registers: [registry],
    }),
  };
}
