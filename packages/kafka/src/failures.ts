// What a handler's failure says about the records it was handed: whether waiting helps (the broker or the
// database is away), whether the records themselves are refused (they would fail however often they came),
// or neither is known.
import { UndecodableEventError } from '@mds/contracts';
import { isDatabaseError } from '@mds/logging';

/**
 * Thrown by a handler for a record whose content it refuses (a value its store cannot hold, a field it
 * cannot read): the consumer sets the record aside at once instead of retrying it. Say why in the message
 * without quoting the record (no number, no text): it is logged and stored as the dead letter's reason.
 */
export class RefusedRecordError extends Error {
  override readonly name = 'RefusedRecordError';
}

/**
 * `transient`: the handler could not reach what it stores in or asks (waiting helps; nothing is set aside).
 * `record`: the records' content is refused (PostgreSQL data exceptions and integrity violations, a
 * RefusedRecordError): retrying the same records cannot pass. `unknown`: anything else (a bug, a missing
 * table): retried a few times, then narrowed down to one record.
 */
export type FailureKind = 'transient' | 'record' | 'unknown';

/** Node's and undici's codes for a peer that cannot be reached or went away. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

/** SQLSTATEs (or their classes) after which the same statement can pass: the server, not the row. */
function transientSqlState(code: string): boolean {
  const cls = code.slice(0, 2);
  return (
    cls === '08' || // connection exception
    cls === '53' || // insufficient resources (too many connections, disk full, out of memory)
    cls === '40' || // serialization failure, deadlock detected
    code === '57014' || // statement timeout, cancelled
    code === '57P01' || // admin shutdown
    code === '57P02' || // crash shutdown
    code === '57P03' || // cannot connect now (starting up)
    code === '55P03' || // lock not available
    code === '58000' || // system error
    code === '58030' // io error
  );
}

/** pg's and pg-pool's errors for a connection lost or never made carry no code: only these messages. */
const LOST_CONNECTION =
  /Connection terminated|connection error and is not queryable|Client was closed|timeout exceeded when trying to connect|Knex: Timeout acquiring a connection/i;

/** The kind of one error, not following its causes. */
function kindOf(error: unknown): FailureKind {
  if (!(error instanceof Error)) return 'unknown';
  if (error instanceof RefusedRecordError || error instanceof UndecodableEventError) return 'record';
  if (isDatabaseError(error)) {
    const cls = error.code.slice(0, 2);
    if (cls === '22' || cls === '23') return 'record';
    return transientSqlState(error.code) ? 'transient' : 'unknown';
  }
  const e = error as { code?: unknown; retriable?: unknown; name: string };
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return 'transient';
  // kafkajs's retriable errors (a broker restarting, a leader moving), the registry client's RegistryError
  // with `retriable`, and whatever else says so.
  if (e.retriable === true) return 'transient';
  if (
    [
      'KafkaJSConnectionError',
      'KafkaJSRequestTimeoutError',
      'KafkaJSNumberOfRetriesExceeded',
      'KafkaJSBrokerNotFound',
      'KafkaJSLockTimeout',
      'PublishTimeoutError',
      'IncompleteWriteError',
      'KnexTimeoutError',
      'TimeoutError',
      'AbortError',
    ].includes(e.name)
  )
    return 'transient';
  if (LOST_CONNECTION.test(error.message)) return 'transient';
  return 'unknown';
}

/**
 * The kind of a handler's failure, looking through its causes: transient if anything in the chain says the
 * peer was away, else record if anything refuses the content, else unknown.
 */
export function failureKind(error: unknown): FailureKind {
  const kinds: FailureKind[] = [];
  let e: unknown = error;
  for (let depth = 0; e !== undefined && e !== null && depth < 10; depth++) {
    kinds.push(kindOf(e));
    e = e instanceof Error ? (e as { cause?: unknown }).cause : undefined;
  }
  if (kinds.includes('transient')) return 'transient';
  return kinds.includes('record') ? 'record' : 'unknown';
}
