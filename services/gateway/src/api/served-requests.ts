import type { NextFunction, Request, Response } from 'express';
import type { Caller } from '@mds/registry-client';
import type { ServedRequest } from '../application/request-log.js';

/** What the request log is told of each authenticated request. */
export type RecordServed = (request: ServedRequest) => void;

/**
 * Put first on a route of the API: once the answer is sent, a request that was authenticated (a caller is set,
 * whatever its status after that) is handed to `record` with the event id it made (the body's `event_id`) or
 * read (the path's). A request no key vouched for (401, 429 before authentication) is no key's to log.
 */
export function servedRequests(record: RecordServed, operation: string) {
  return (req: Request, res: Response, next: NextFunction) => {
    const receivedAt = new Date();
    const started = performance.now();
    let eventId = typeof req.params.event_id === 'string' ? req.params.event_id : '';
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      const id = (body as { event_id?: unknown } | null)?.event_id;
      if (res.statusCode < 400 && typeof id === 'string') eventId = id;
      return json(body);
    };
    res.once('finish', () => {
      const caller = res.locals.caller as Caller | undefined;
      if (!caller) return;
      record({
        companyId: caller.companyId,
        keyId: caller.keyId,
        operation,
        status: res.statusCode,
        subjectEventId: eventId.slice(0, 64),
        requestId: String(res.locals.requestId ?? ''),
        receivedAt,
        durationMs: performance.now() - started,
      });
    });
    next();
  };
}
