import { registerMessenger } from '@mds/contracts';
import { fakeMessenger } from '@mds/contracts/testing/messengers';
import { fieldErrors } from '@mds/service-kit';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from './openapi.js';
import {
  changePhoneRequestSchema,
  clientCheckRequestSchema,
  SEND_AT_MAX_AHEAD_MS,
  sendBatchItemSchema,
  sendRequestSchema,
} from './schemas.js';

const send = { phone_number: '79123456789', text: 'Hello' };
const errorsOf = (body: unknown) => {
  const result = sendRequestSchema.safeParse(body);
  return result.success ? [] : fieldErrors(result.error).map((e) => `${e.pointer} ${e.code}`);
};

describe('metadata', () => {
  const body = { ...send, service: 'telegram' };
  it('takes up to 20 keys of [A-Za-z0-9_.-]{1,40} with string values up to 500 characters', () => {
    const most = Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => [`k.${i}_-${'x'.repeat(34)}`, 'v'.repeat(500)]),
    );
    expect(errorsOf({ ...body, metadata: most })).toEqual([]);
    expect(errorsOf({ ...body, metadata: {} })).toEqual([]);
    expect(errorsOf({ ...body, metadata: { tab: 'a\tb', empty: '' } })).toEqual([]);
  });

  it('refuses each violation with its own code, at the key', () => {
    const tooMany = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v']));
    expect(errorsOf({ ...body, metadata: tooMany })).toEqual(['#/metadata metadata_too_many_keys']);
    expect(
      errorsOf({ ...body, metadata: { '': 'v', 'a b': 'v', ['k'.repeat(41)]: 'v', ключ: 'v', ok: 'v' } }),
    ).toEqual([
      '#/metadata/ metadata_invalid_key',
      '#/metadata/a b metadata_invalid_key',
      `#/metadata/${'k'.repeat(41)} metadata_invalid_key`,
      '#/metadata/ключ metadata_invalid_key',
    ]);
    expect(errorsOf({ ...body, metadata: { emoji: '😀'.repeat(500) } })).toEqual([]);
    expect(errorsOf({ ...body, metadata: { long: 'v'.repeat(501) } })).toEqual([
      '#/metadata/long metadata_value_too_long',
    ]);
    expect(errorsOf({ ...body, metadata: { nul: 'a\u0000b', esc: '\u001b[31m' } })).toEqual([
      '#/metadata/nul invalid_characters',
      '#/metadata/esc invalid_characters',
    ]);
    expect(errorsOf({ ...body, metadata: { n: 42 } })).toEqual(['#/metadata/n invalid_type']);
    expect(errorsOf({ ...body, metadata: ['a'] })).toEqual(['#/metadata invalid_type']);
  });

  it('is taken by change_phone and client/check alike', () => {
    const metadata = { ticket: 'T-1' };
    expect(clientCheckRequestSchema.parse({ phone_number: '79123456789', metadata })).toMatchObject({
      metadata,
    });
    expect(
      changePhoneRequestSchema.safeParse({
        old_phone: '79123456789',
        new_phone: '79876543210',
        metadata: { 'a b': '' },
      }).success,
    ).toBe(false);
  });
});

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

describe('fallback on send', () => {
  const body = { ...send, service: 'telegram', bot_name: 'shop_bot' };
  it('takes 1 to 3 channels, each a service and optionally a bot; [] is none', () => {
    expect(errorsOf({ ...body, fallback: [{ service: 'max' }] })).toEqual([]);
    expect(
      errorsOf({
        ...body,
        fallback: [{ service: 'telegram' }, { service: 'max', bot_name: 'shop_max_bot' }, { service: 'max' }],
      }),
    ).toEqual([]);
    const parsed = sendRequestSchema.parse({ ...body, fallback: [] });
    expect(parsed.fallback).toBeUndefined();
    // The same request as one without it, for its Idempotency-Key's fingerprint.
    expect(JSON.stringify(parsed)).toBe(JSON.stringify(sendRequestSchema.parse(body)));
  });

  it('refuses more than 3 channels at #/fallback', () => {
    const four = [{ service: 'max' }, { service: 'max', bot_name: 'a' }, { service: 'max', bot_name: 'b' }];
    expect(errorsOf({ ...body, fallback: [...four, { service: 'max', bot_name: 'c' }] })).toEqual([
      '#/fallback fallback_too_many',
    ]);
  });

  it("refuses a bad service or bot_name with send's own codes, and unknown keys, at the channel", () => {
    expect(
      errorsOf({
        ...body,
        fallback: [{ service: 'owl' }, { service: 'max', bot_name: 'a b' }, { bot_name: 'x' }],
      }),
    ).toEqual([
      '#/fallback/0/service invalid_value',
      '#/fallback/1/bot_name invalid_format',
      '#/fallback/2/service required',
    ]);
    expect(errorsOf({ ...body, fallback: [{ service: 'max', phone_number: '79123456789' }] })).toEqual([
      '#/fallback/0/phone_number unknown_field',
    ]);
    expect(errorsOf({ ...body, fallback: { service: 'max' } })).toEqual(['#/fallback invalid_type']);
  });

  it("refuses a channel equal to one before it, the send's own included (no bot_name: the default bot)", () => {
    expect(errorsOf({ ...body, fallback: [{ service: 'telegram', bot_name: 'shop_bot' }] })).toEqual([
      '#/fallback/0 fallback_duplicate_channel',
    ]);
    expect(errorsOf({ ...body, fallback: [{ service: 'max' }, { service: 'max' }] })).toEqual([
      '#/fallback/1 fallback_duplicate_channel',
    ]);
    expect(
      errorsOf({ ...send, service: 'max', fallback: [{ service: 'telegram' }, { service: 'max' }] }),
    ).toEqual(['#/fallback/1 fallback_duplicate_channel']);
    // Another bot of the same messenger is another channel.
    expect(errorsOf({ ...body, fallback: [{ service: 'telegram' }] })).toEqual([]);
  });

  it('is checked alike on each message of a batch', () => {
    const result = sendBatchItemSchema.safeParse({
      ...body,
      fallback: [{ service: 'telegram', bot_name: 'shop_bot' }],
    });
    expect(result.success ? [] : fieldErrors(result.error).map((e) => `${e.pointer} ${e.code}`)).toEqual([
      '#/fallback/0 fallback_duplicate_channel',
    ]);
  });

  it("takes a text only when it fits every channel's messenger", () => {
    const text = 'x'.repeat(4001);
    expect(errorsOf({ ...body, text })).toEqual([]);
    expect(errorsOf({ ...body, text, fallback: [{ service: 'max' }] })).toEqual(['#/text text_too_long']);
  });
});
