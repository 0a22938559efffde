import { registerMessenger } from '@mds/contracts';
import { fakeMessenger } from '@mds/contracts/testing/messengers';
import { fieldErrors } from '@mds/service-kit';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from './openapi.js';
import { sendRequestSchema } from './schemas.js';

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
