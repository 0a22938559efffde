import { webhookIdOf, type Notification } from '../domain/notifications.js';
import type { NewDelivery } from './ports.js';

/**
 * The delivery of one notification: its webhook-id follows from the outcome event (the same every time), its
 * body is serialised once here (the exact bytes signed and sent on every attempt), and it continues the trace
 * of the event that asked for it.
 */
export function deliveryOf(
  n: Notification,
  createdAt: Date,
  trace: { traceparent?: string | undefined; tracestate?: string | undefined },
): NewDelivery {
  return {
    webhookId: webhookIdOf(n.sourceEventId),
    sourceEventId: n.sourceEventId,
    companyId: n.companyId,
    kind: n.kind,
    subjectId: n.subjectId,
    body: JSON.stringify(n.body),
    createdAt,
    traceparent: trace.traceparent,
    tracestate: trace.tracestate,
  };
}
