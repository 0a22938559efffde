import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import createClient from 'openapi-fetch';
import type { components, paths } from './gen/api.js';
import { MdsNetworkError, errorOf } from './errors.js';

export type SendRequest = components['schemas']['SendRequest'];
export type ChangePhoneRequest = components['schemas']['ChangePhoneRequest'];
export type ClientCheckRequest = components['schemas']['ClientCheckRequest'];
export type SendAccepted = components['schemas']['SendAccepted'];
export type Accepted = components['schemas']['Accepted'];
export type EventState = components['schemas']['EventState'];
export type LinkButton = components['schemas']['LinkButton'];
export type SendBatchItem = components['schemas']['SendBatchItem'];
export type SendBatchAccepted = components['schemas']['SendBatchAccepted'];
export type SendBatchResult = SendBatchAccepted['results'][number];
/** `metadata` of send, change_phone and client/check: echoed in every webhook of the request and in its state. */
export type Metadata = components['schemas']['Metadata'];
export type CancelAccepted = components['schemas']['CancelAccepted'];
/** A channel of send's `fallback`: a messenger and optionally one of its bots, tried when the one before could not reach the person. */
export type FallbackChannel = components['schemas']['FallbackChannel'];

export interface MdsClientOptions {
  /** Where the gateway answers, e.g. `https://mds.example.com` (the paths carry `/api/v1`). */
  baseUrl: string;
  /** The company's API key (X-API-Key). */
  apiKey: string;
  /** Retries of a 429, 503 or 409 (idempotency in progress) and of network failures; 3 unless told. */
  maxRetries?: number;
  /** The longest wait before a retry, whatever Retry-After says; 30 s unless told. */
  maxRetryDelayMs?: number;
  /** A fetch of your own (a proxy agent, instrumentation); the global fetch otherwise. */
  fetch?: typeof globalThis.fetch;
}

export interface CallOptions {
  /** The Idempotency-Key of this request; one is made (a UUID) when absent, and kept across its retries. */
  idempotencyKey?: string;
  /** Sent as X-Request-Id: yours to find the request in the service's logs and problem bodies. */
  requestId?: string;
  signal?: AbortSignal;
}

const RETRIED = new Set([429, 503]);
const SAFE_RETRY_CODES = new Set(['idempotency_request_in_progress']);

/** Seconds of a Retry-After header (delta-seconds or an HTTP date), or undefined. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

type Outcome<T> = { data?: T; error?: unknown; response: Response };

/**
 * The messenger delivery service's public API, typed from its OpenAPI document. Every POST carries an
 * Idempotency-Key (made when not given), so its retries (429 and 503 after their Retry-After, a request still in
 * progress, a network failure) are accepted at most once. Failures throw `MdsApiError` and its kinds.
 */
export class MdsClient {
  private readonly api;
  private readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;

  constructor(private readonly options: MdsClientOptions) {
    this.api = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      headers: { 'X-API-Key': options.apiKey },
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
  }

  /** POST /api/v1/send: queues a message; its outcome comes as a `message.status` webhook. */
  send(body: SendRequest, options: CallOptions = {}): Promise<SendAccepted> {
    const header = this.headers(options, true);
    return this.call('POST /api/v1/send', options, () =>
      this.api.POST('/api/v1/send', { body, params: { header }, signal: options.signal }),
    );
  }

  /**
   * POST /api/v1/send/batch: 1 to 500 messages, each accepted or rejected on its own (one result per message, in
   * order). A message without an `idempotency_key` is given one (a UUID), kept across retries, so a retried
   * batch records each message once.
   */
  sendBatch(
    messages: readonly SendBatchItem[],
    options: Omit<CallOptions, 'idempotencyKey'> = {},
  ): Promise<SendBatchAccepted> {
    const header = this.headers(options, false);
    const body = {
      messages: messages.map((m) => ({ ...m, idempotency_key: m.idempotency_key ?? randomUUID() })),
    };
    return this.call('POST /api/v1/send/batch', options, () =>
      this.api.POST('/api/v1/send/batch', { body, params: { header }, signal: options.signal }),
    );
  }

  /** POST /api/v1/change_phone: its outcome comes as a `client.phone_changed` webhook. */
  changePhone(body: ChangePhoneRequest, options: CallOptions = {}): Promise<Accepted> {
    const header = this.headers(options, true);
    return this.call('POST /api/v1/change_phone', options, () =>
      this.api.POST('/api/v1/change_phone', { body, params: { header }, signal: options.signal }),
    );
  }

  /** POST /api/v1/client/check: the answer comes as a `client.check` webhook. */
  checkClient(body: ClientCheckRequest, options: CallOptions = {}): Promise<Accepted> {
    const header = this.headers(options, true);
    return this.call('POST /api/v1/client/check', options, () =>
      this.api.POST('/api/v1/client/check', { body, params: { header }, signal: options.signal }),
    );
  }

  /**
   * POST /api/v1/cancel: cancels a message not yet handed to the messenger (one scheduled with `send_at`).
   * Resolves once the cancel is accepted; the `message.status` webhook says whether it ended `CANCELED`.
   * 404 (`MdsApiError`) for an id the company has no message of, 409 once the message ended.
   */
  cancel(eventId: string, options: CallOptions = {}): Promise<CancelAccepted> {
    const header = this.headers(options, true);
    return this.call('POST /api/v1/cancel', options, () =>
      this.api.POST('/api/v1/cancel', {
        body: { event_id: eventId },
        params: { header },
        signal: options.signal,
      }),
    );
  }

  /** GET /api/v1/events/{event_id}: the state of a message or request and its history (404 until readable). */
  getEvent(eventId: string, options: Omit<CallOptions, 'idempotencyKey'> = {}): Promise<EventState> {
    const header = this.headers(options, false);
    return this.call(`GET /api/v1/events/${eventId}`, options, () =>
      this.api.GET('/api/v1/events/{event_id}', {
        params: { path: { event_id: eventId }, header },
        signal: options.signal,
      }),
    );
  }

  private headers(options: CallOptions, idempotent: boolean) {
    return {
      ...(idempotent ? { 'Idempotency-Key': options.idempotencyKey ?? randomUUID() } : {}),
      ...(options.requestId ? { 'X-Request-Id': options.requestId } : {}),
    };
  }

  private async call<T>(what: string, options: CallOptions, attempt: () => Promise<Outcome<T>>): Promise<T> {
    for (let retry = 0; ; retry++) {
      let outcome: Outcome<T>;
      try {
        outcome = await attempt();
      } catch (cause) {
        if (options.signal?.aborted) throw cause;
        if (retry >= this.maxRetries) throw new MdsNetworkError(what, this.options.baseUrl, cause);
        await sleep(this.backoff(retry), undefined, { signal: options.signal });
        continue;
      }
      const { response } = outcome;
      if (response.ok) return outcome.data as T;
      const error = errorOf(what, response, outcome.error);
      const retryable =
        RETRIED.has(response.status) || (response.status === 409 && SAFE_RETRY_CODES.has(error.code));
      if (!retryable || retry >= this.maxRetries) throw error;
      const wait = retryAfterMs(response.headers.get('retry-after')) ?? this.backoff(retry);
      await sleep(Math.min(wait, this.maxRetryDelayMs), undefined, { signal: options.signal });
    }
  }

  /** 0.5 s, 1 s, 2 s... with ±20% jitter, when the answer says nothing of when to retry. */
  private backoff(retry: number): number {
    return Math.min(this.maxRetryDelayMs, 500 * 2 ** retry * (0.8 + Math.random() * 0.4));
  }
}
