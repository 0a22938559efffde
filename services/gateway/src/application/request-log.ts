import { newEvent, topics, type ApiRequestEvent } from '@mds/contracts';
import type { OutgoingEvent } from '@mds/kafka';
import { PRODUCER } from './events.js';

/** One authenticated request to the public API, as its key's request log keeps it. */
export interface ServedRequest {
  companyId: string;
  keyId: string;
  /** "send", "send_batch", "change_phone", "client_check", "read_event", "cancel". */
  operation: string;
  status: number;
  /** The event_id the request made or read; empty when none. */
  subjectEventId: string;
  requestId: string;
  receivedAt: Date;
  durationMs: number;
}

const entryOf = (r: ServedRequest) => ({
  keyId: r.keyId,
  operation: r.operation,
  status: r.status,
  subjectEventId: r.subjectEventId,
  requestId: r.requestId,
  durationMs: Math.max(0, Math.round(r.durationMs)),
  receivedAt: r.receivedAt,
});

/**
 * The request log's record of the requests one key made in a publishing period (`requests`: of one company and
 * key, oldest first): keyed by its key, so one key's requests stay in order.
 */
export function apiRequestsServed(
  requests: ServedRequest[],
  eventId: string,
): OutgoingEvent<ApiRequestEvent> {
  const first = requests[0]!;
  return {
    topic: topics.apiRequests,
    key: first.keyId,
    record: newEvent<ApiRequestEvent>({
      eventId,
      occurredAt: first.receivedAt,
      companyId: first.companyId,
      streamId: first.keyId,
      producer: PRODUCER,
      event: { $case: 'apiRequestsServed', value: { requests: requests.map(entryOf) } },
    }),
  };
}

/** Buffered requests as their records' contents: by company and key, each key's in the order they came. */
export function byKey(requests: ServedRequest[]): ServedRequest[][] {
  const groups = new Map<string, ServedRequest[]>();
  for (const r of requests) {
    const key = `${r.companyId}/${r.keyId}`;
    const group = groups.get(key);
    if (group) group.push(r);
    else groups.set(key, [r]);
  }
  return [...groups.values()];
}
