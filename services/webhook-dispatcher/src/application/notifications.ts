import { endpointReceives } from '@mds/contracts';
import { webhookIdOf, type Notification } from '../domain/notifications.js';
import type { Endpoint, EndpointDirectory, NewDelivery } from './ports.js';

export interface Trace {
  traceparent?: string | undefined;
  tracestate?: string | undefined;
}

/**
 * The deliveries of one notification: one per endpoint subscribed to its type, each with its own webhook-id (the
 * same every time for that endpoint). Its body is serialised once here (the exact bytes signed and sent on every
 * attempt), and each continues the trace of the event that asked for it. A disabled endpoint's delivery is
 * never sent: it fails at once ("the webhook endpoint is disabled"), so a recover after re-enabling reaches
 * what came meanwhile, as it did before endpoints.
 */
export function deliveriesOf(
  n: Notification,
  endpoints: readonly Endpoint[],
  createdAt: Date,
  trace: Trace,
): NewDelivery[] {
  const body = JSON.stringify(n.body);
  return endpoints
    .filter((e) => endpointReceives(e.eventTypes, n.kind))
    .map((e) => ({
      webhookId: webhookIdOf(n.sourceEventId, e.endpointId),
      sourceEventId: n.sourceEventId,
      companyId: n.companyId,
      endpointId: e.endpointId,
      kind: n.kind,
      subjectId: n.subjectId,
      body,
      createdAt,
      traceparent: trace.traceparent,
      tracestate: trace.tracestate,
    }));
}

/** The registry could not say where to deliver: the batch waits and is handled again (nothing is set aside). */
export class EndpointsUnavailableError extends Error {
  override readonly name = 'EndpointsUnavailableError';
  /** Read by @mds/kafka's failure classification: waiting helps. */
  readonly retriable = true;
}

/**
 * Fans notifications out to their companies' endpoints, each company's list read from the directory (memory, in
 * production). Any failure to read one is retriable for the consumer: a registry away or refusing this service
 * must hold notifications back, never have them set aside.
 */
export async function fanOut<T extends { notification: Notification; trace: Trace }>(
  directory: Pick<EndpointDirectory, 'endpoints'>,
  items: readonly T[],
  createdAt: Date,
): Promise<{ item: T; delivery: NewDelivery }[]> {
  const companies = [...new Set(items.map((i) => i.notification.companyId))];
  let lists: Map<string, Endpoint[]>;
  try {
    lists = new Map(
      await Promise.all(companies.map(async (c) => [c, await directory.endpoints(c)] as const)),
    );
  } catch (error) {
    throw new EndpointsUnavailableError('could not read the webhook endpoints of a company', {
      cause: error,
    });
  }
  return items.flatMap((item) =>
    deliveriesOf(item.notification, lists.get(item.notification.companyId)!, createdAt, item.trace).map(
      (delivery) => ({ item, delivery }),
    ),
  );
}
