import { newEvent, topics, type ApiRequestEvent } from '@mds/contracts';
import type { OutgoingEvent } from '@mds/kafka';
import { PRODUCER } from './events.js';

/** One authenticated request to the public API, as its key's request log keeps it. */
export interface ServedRequest {
  companyId: string;
  keyId: string;
  /** "send", "change_phone", "client_check", "read_event". */
  operation: string;
  status: number;
  /** The event_id the request made or read; empty when none. */
  subjectEventId: string;
  requestId: string;
  receivedAt: Date;
  durationMs: number;
}

/** The request log's record of one request: keyed by its key, so one key's requests stay in order. */
export function apiRequestServed(r: ServedRequest, eventId: string): OutgoingEvent<ApiRequestEvent> {
  return {
    topic: topics.apiRequests,
    key: r.keyId,
    record: newEvent<ApiRequestEvent>({
      eventId,
      occurredAt: r.receivedAt,
      companyId: r.companyId,
      streamId: r.keyId,
      ...(r.subjectEventId ? { correlationId: r.subjectEventId } : {}),
      causationId: r.requestId,
      producer: PRODUCER,
      event: {
        $case: 'apiRequestServed',
        value: {
          keyId: r.keyId,
          operation: r.operation,
          status: r.status,
          subjectEventId: r.subjectEventId,
          requestId: r.requestId,
          durationMs: Math.max(0, Math.round(r.durationMs)),
        },
      },
    }),
  };
}
