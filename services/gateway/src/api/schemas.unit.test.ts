import { registerMessenger } from '@mds/contracts';
import { fakeMessenger } from '@mds/contracts/testing/messengers';
import { fieldErrors } from '@mds/service-kit';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from './openapi.js';
import { SEND_AT_MAX_AHEAD_MS, sendRequestSchema } from './schemas.js';

const send = { phone_number: '79123456789', text: 'Hello' };
const errorsOf = (body: unknown) => {
  const result = sendRequestSchema.safeParse(body);
  return result.success ? [] : fieldErrors(result.error).map((e) => `${e.pointer} ${e.code}`);
};

describe('the send body and the messenger catalogue', () => {
  it("takes each built-in messenger's name with its own text limit, and refuses an unknown one", () => {
    expect(errorsOf({ ...send, service: 'telegram', text: 'x'.repeat(4096) })).toEqual([]);
    expect(errorsOf({ ...send, service: 'max', text: 'x'.repeat(4001) })).toEqual(['#/text text_too_long']);
    expect(errorsOf({ ...send, service: 'pigeon' })).toEqual(['#/service invalid_value']);
    expect(errorsOf({ ...send })).toEqual(['#/service required']);
  });

  it('takes a messenger registered after the schema was made, when a request names it, with its limit', () => {
    registerMessenger(fakeMessenger('pigeon', 90, { textLimit: 20 }));
    expect(errorsOf({ ...send, service: 'pigeon', text: 'x'.repeat(20) })).toEqual([]);
    expect(errorsOf({ ...send, service: 'pigeon', text: 'x'.repeat(21) })).toEqual(['#/text text_too_long']);
    expect(errorsOf({ ...send, service: 'owl' })).toEqual(['#/service invalid_value']);
    // The document made now shows it: one body per messenger of the catalogue, with its limit.
    const document = JSON.stringify(openApiDocument());
    expect(document).toContain('"title":"SendRequest (pigeon)"');
    expect(document).toContain('20 for Pigeon');
  });
});

describe('ttl_seconds on send', () => {
  const body = { ...send, service: 'telegram' };
  it('takes a whole number of seconds from 10 to 604800, or none', () => {
    expect(errorsOf(body)).toEqual([]);
    expect(errorsOf({ ...body, ttl_seconds: 10 })).toEqual([]);
    expect(errorsOf({ ...body, ttl_seconds: 604_800 })).toEqual([]);
  });

  it('refuses one out of range, not whole, or not a number, with a field code', () => {
    expect(errorsOf({ ...body, ttl_seconds: 9 })).toEqual(['#/ttl_seconds ttl_out_of_range']);
    expect(errorsOf({ ...body, ttl_seconds: 604_801 })).toEqual(['#/ttl_seconds ttl_out_of_range']);
    expect(errorsOf({ ...body, ttl_seconds: 60.5 })).toEqual(['#/ttl_seconds invalid_type']);
    expect(errorsOf({ ...body, ttl_seconds: '60' })).toEqual(['#/ttl_seconds invalid_type']);
    expect(errorsOf({ ...body, ttl_seconds: null })).toEqual(['#/ttl_seconds invalid_type']);
  });
});

describe('send_at on send', () => {
  const body = { ...send, service: 'telegram' };
  const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
  it('takes an RFC 3339 time with an offset up to 30 days ahead; the past too (it means now)', () => {
    expect(errorsOf({ ...body, send_at: inMs(60_000) })).toEqual([]);
    expect(errorsOf({ ...body, send_at: '2026-01-01T09:00:00+03:00' })).toEqual([]);
    expect(errorsOf({ ...body, send_at: inMs(SEND_AT_MAX_AHEAD_MS - 60_000) })).toEqual([]);
  });

  it('refuses a bad form, a time without an offset, or one more than 30 days ahead, with a field code', () => {
    expect(errorsOf({ ...body, send_at: 'tomorrow' })).toEqual(['#/send_at invalid_format']);
    expect(errorsOf({ ...body, send_at: '2026-12-01T09:00:00' })).toEqual(['#/send_at invalid_format']);
    expect(errorsOf({ ...body, send_at: 1_764_000_000 })).toEqual(['#/send_at invalid_type']);
    expect(errorsOf({ ...body, send_at: inMs(SEND_AT_MAX_AHEAD_MS + 60_000) })).toEqual([
      '#/send_at send_at_out_of_range',
    ]);
  });

  it('refuses a ttl_seconds (counted from acceptance) that ends at or before send_at', () => {
    expect(errorsOf({ ...body, send_at: inMs(120_000), ttl_seconds: 60 })).toEqual([
      '#/send_at send_at_after_expiry',
    ]);
    expect(errorsOf({ ...body, send_at: inMs(60_000), ttl_seconds: 3_600 })).toEqual([]);
  });
});
