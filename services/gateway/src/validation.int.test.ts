import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyWithKey, post, startStack, type TestStack } from '../test/support.js';

let stack: TestStack;
let key: string;

beforeAll(async () => {
  stack = await startStack({ MAX_BODY_BYTES: '20000' });
  key = (await companyWithKey(stack)).apiKey;
});
afterAll(() => stack?.stop());

const good = { phone_number: '79123456789', text: 'hello', service: 'telegram' };
type Problem = {
  type: string;
  title: string;
  status: number;
  code: string;
  detail?: string;
  errors?: { pointer: string; code: string; detail: string }[];
  request_id?: string;
};

async function problem(response: Response): Promise<Problem> {
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  return (await response.json()) as Problem;
}

describe('validation failures are 422 problems naming each field', () => {
  const cases: [string, string, unknown, { pointer: string; code: string }[]][] = [
    [
      '/send',
      'a national 8 number',
      { ...good, phone_number: '89123456789' },
      [{ pointer: '#/phone_number', code: 'invalid_phone_number' }],
    ],
    [
      '/send',
      'a short number',
      { ...good, phone_number: '7912345678' },
      [{ pointer: '#/phone_number', code: 'invalid_phone_number' }],
    ],
    [
      '/send',
      'letters in the number',
      { ...good, phone_number: '7912345678x' },
      [{ pointer: '#/phone_number', code: 'invalid_phone_number' }],
    ],
    [
      '/send',
      'a number that is a number',
      { ...good, phone_number: 79123456789 },
      [{ pointer: '#/phone_number', code: 'invalid_type' }],
    ],
    [
      '/send',
      'an unknown messenger',
      { ...good, service: 'whatsapp' },
      [{ pointer: '#/service', code: 'invalid_value' }],
    ],
    ['/send', 'empty text', { ...good, text: '' }, [{ pointer: '#/text', code: 'text_empty' }]],
    ['/send', 'blank text', { ...good, text: '  \n ' }, [{ pointer: '#/text', code: 'text_empty' }]],
    [
      '/send',
      "text over Telegram's 4096",
      { ...good, text: 'x'.repeat(4097) },
      [{ pointer: '#/text', code: 'text_too_long' }],
    ],
    [
      '/send',
      "text over MAX's 4000",
      { ...good, service: 'max', text: 'x'.repeat(4001) },
      [{ pointer: '#/text', code: 'text_too_long' }],
    ],
    [
      '/send',
      'four fallback channels',
      {
        ...good,
        fallback: [{ service: 'max' }, ...['a', 'b', 'c'].map((bot_name) => ({ service: 'max', bot_name }))],
      },
      [{ pointer: '#/fallback', code: 'fallback_too_many' }],
    ],
    [
      '/send',
      "a fallback channel equal to the send's own (the default bot)",
      { ...good, fallback: [{ service: 'max' }, { service: 'telegram' }] },
      [{ pointer: '#/fallback/1', code: 'fallback_duplicate_channel' }],
    ],
    [
      '/send',
      'a fallback channel of an unknown messenger',
      { ...good, fallback: [{ service: 'whatsapp' }] },
      [{ pointer: '#/fallback/0/service', code: 'invalid_value' }],
    ],
    [
      '/send',
      '11 buttons',
      { ...good, buttons: Array.from({ length: 11 }, () => ({ text: 'b', url: 'https://e.x' })) },
      [{ pointer: '#/buttons', code: 'too_long' }],
    ],
    [
      '/send',
      'a button with an ftp URL',
      { ...good, buttons: [{ text: 'b', url: 'ftp://e.x/f' }] },
      [{ pointer: '#/buttons/0/url', code: 'invalid_url' }],
    ],
    [
      '/send',
      'a button with a relative URL',
      { ...good, buttons: [{ text: 'b', url: '/orders/1' }] },
      [{ pointer: '#/buttons/0/url', code: 'invalid_url' }],
    ],
    [
      '/send',
      'a button without text',
      { ...good, buttons: [{ text: ' ', url: 'https://e.x' }] },
      [{ pointer: '#/buttons/0/text', code: 'too_short' }],
    ],
    [
      '/send',
      'a button with an extra field',
      { ...good, buttons: [{ text: 'b', url: 'https://e.x', style: 'x' }] },
      [{ pointer: '#/buttons/0/style', code: 'unknown_field' }],
    ],
    [
      '/send',
      'buttons that are not an array',
      { ...good, buttons: { text: 'b' } },
      [{ pointer: '#/buttons', code: 'invalid_type' }],
    ],
    [
      '/send',
      'text of zero-width spaces, a BOM and a word joiner only',
      { ...good, text: '\u200B\uFEFF\u2060 \u200D' },
      [{ pointer: '#/text', code: 'text_invisible' }],
    ],
    [
      '/send',
      'text of Hangul fillers only',
      { ...good, text: '\u3164\u3164' },
      [{ pointer: '#/text', code: 'text_invisible' }],
    ],
    [
      '/send',
      '2,049 emoji for Telegram: 4,098 UTF-16 code units, over its 4096',
      { ...good, text: '😀'.repeat(2049) },
      [{ pointer: '#/text', code: 'text_too_long' }],
    ],
    [
      '/send',
      'button text of a zero-width space',
      { ...good, buttons: [{ text: '\u200B', url: 'https://e.x' }] },
      [{ pointer: '#/buttons/0/text', code: 'text_invisible' }],
    ],
    [
      '/send',
      'a button URL with a user name and password',
      { ...good, buttons: [{ text: 'b', url: 'https://user:pw@example.com/x' }] },
      [{ pointer: '#/buttons/0/url', code: 'url_userinfo' }],
    ],
    [
      '/send',
      'a button URL with a NUL (the one rule for every string comes first)',
      { ...good, buttons: [{ text: 'b', url: 'https://example.com/\u0000x' }] },
      [{ pointer: '#/buttons/0/url', code: 'invalid_characters' }],
    ],
    [
      '/send',
      'a button URL with a line feed',
      { ...good, buttons: [{ text: 'b', url: 'https://example.com/\nx' }] },
      [{ pointer: '#/buttons/0/url', code: 'url_control_characters' }],
    ],
    [
      '/send',
      'a button URL with a tab the URL parser would drop',
      { ...good, buttons: [{ text: 'b', url: 'https://exa\tmple.com/' }] },
      [{ pointer: '#/buttons/0/url', code: 'url_control_characters' }],
    ],
    [
      '/send',
      'a bot name with spaces',
      { ...good, bot_name: 'my bot' },
      [{ pointer: '#/bot_name', code: 'invalid_format' }],
    ],
    [
      '/send',
      'an unknown field',
      { ...good, parse_mode: 'HTML' },
      [{ pointer: '#/parse_mode', code: 'unknown_field' }],
    ],
    [
      '/send',
      'nothing at all',
      {},
      [
        { pointer: '#/phone_number', code: 'required' },
        { pointer: '#/text', code: 'required' },
        { pointer: '#/service', code: 'required' },
      ],
    ],
    ['/send', 'an array body', [good], [{ pointer: '#/', code: 'invalid_type' }]],
    [
      '/change_phone',
      'a bad new number',
      { old_phone: '79123456789', new_phone: '123' },
      [{ pointer: '#/new_phone', code: 'invalid_phone_number' }],
    ],
    [
      '/change_phone',
      'a missing old number',
      { new_phone: '79123456789' },
      [{ pointer: '#/old_phone', code: 'required' }],
    ],
    [
      '/client/check',
      'a 12-digit number',
      { phone_number: '380501234567' },
      [{ pointer: '#/phone_number', code: 'invalid_phone_number' }],
    ],
    [
      '/client/check',
      'an unknown field',
      { phone_number: '79123456789', name: 'x' },
      [{ pointer: '#/name', code: 'unknown_field' }],
    ],
  ];

  it.each(cases)('%s: %s', async (path, _what, body, expected) => {
    const response = await post(stack, path, body, { 'x-api-key': key });
    expect(response.status).toBe(422);
    const p = await problem(response);
    expect(p).toMatchObject({
      status: 422,
      code: 'validation_failed',
      title: 'Validation failed',
      type: expect.stringMatching(/validation_failed$/),
    });
    expect(p.errors!.map(({ pointer, code }) => ({ pointer, code }))).toEqual(expected);
    expect(p.errors!.every((e) => e.detail.length > 0)).toBe(true);
    expect(p.request_id).toBe(response.headers.get('x-request-id'));
  });

  it('accepts text of exactly the messenger limit', async () => {
    expect(
      (await post(stack, '/send', { ...good, text: 'x'.repeat(4096) }, { 'x-api-key': key })).status,
    ).toBe(202);
    expect(
      (await post(stack, '/send', { ...good, text: '😀'.repeat(2048) }, { 'x-api-key': key })).status,
    ).toBe(202);
    expect(
      (await post(stack, '/send', { ...good, service: 'max', text: 'x'.repeat(4000) }, { 'x-api-key': key }))
        .status,
    ).toBe(202);
  });
});

// Bodies written as JSON text, as a client on the wire sends them: JSON's own escapes carry NUL, controls and
// lone surrogates into the parsed strings, which no JS object literal of a test shows as plainly.
describe('characters no text may hold are refused in every string field: 422 invalid_characters', () => {
  /** A send body as JSON text, each field given as the JSON it is written as. */
  const body = (fields: Record<string, string>) =>
    `{${Object.entries({ phone_number: '"79123456789"', service: '"telegram"', text: '"hello"', ...fields })
      .map(([name, json]) => `"${name}": ${json}`)
      .join(', ')}}`;
  const cases: [string, string, string, string[]][] = [
    ['/send', 'text with a NUL escape', body({ text: '"nul \\u0000 inside"' }), ['#/text']],
    ['/send', 'text with a lone high surrogate', body({ text: '"lone \\ud800 here"' }), ['#/text']],
    ['/send', 'text with a lone low surrogate', body({ text: '"lone \\udc00"' }), ['#/text']],
    ['/send', 'text with BEL', body({ text: '"ring \\u0007"' }), ['#/text']],
    ['/send', 'text with ESC (a terminal sequence)', body({ text: '"\\u001b[31mred"' }), ['#/text']],
    ['/send', 'text with DEL', body({ text: '"del \\u007f"' }), ['#/text']],
    ['/send', 'text with a C1 control (NEL)', body({ text: '"nel \\u0085"' }), ['#/text']],
    ['/send', 'text with U+FFFE', body({ text: '"nc \\ufffe"' }), ['#/text']],
    ['/send', 'text with U+FFFF, raw UTF-8', body({ text: '"nc \uffff"' }), ['#/text']],
    ['/send', 'text with U+FDD0', body({ text: '"nc \\ufdd0"' }), ['#/text']],
    ['/send', 'text with U+1FFFE, a pair of escapes', body({ text: '"nc \\ud83f\\udffe"' }), ['#/text']],
    ['/send', 'text with U+10FFFF, raw UTF-8', body({ text: '"nc \u{10ffff}"' }), ['#/text']],
    ['/send', 'text of a NUL alone (not text_invisible)', body({ text: '"\\u0000"' }), ['#/text']],
    [
      '/send',
      'text too long and with a NUL: one error for the field',
      body({ text: `"${'x'.repeat(5000)}\\u0000"` }),
      ['#/text'],
    ],
    [
      '/send',
      'button text and URL',
      body({ buttons: '[{"text": "b\\u0000", "url": "https://e.x/\\ud800"}]' }),
      ['#/buttons/0/text', '#/buttons/0/url'],
    ],
    ['/send', 'bot_name', body({ bot_name: '"shop\\u0000bot"' }), ['#/bot_name']],
    [
      '/send',
      'the phone number',
      '{"phone_number": "7912345678\\u00009", "service": "telegram", "text": "hi"}',
      ['#/phone_number'],
    ],
    [
      '/change_phone',
      'old and new numbers',
      '{"old_phone": "79123456789\\u001b", "new_phone": "\\ud83d79123456780"}',
      ['#/old_phone', '#/new_phone'],
    ],
    ['/client/check', 'the number', '{"phone_number": "79123456789\\ufffe"}', ['#/phone_number']],
  ];

  it.each(cases)('%s: %s', async (path, _what, raw, pointers) => {
    const response = await post(stack, path, raw, { 'x-api-key': key });
    expect(response.status).toBe(422);
    const p = await problem(response);
    expect(p.code).toBe('validation_failed');
    expect(p.errors!.map(({ pointer, code }) => ({ pointer, code }))).toEqual(
      pointers.map((pointer) => ({ pointer, code: 'invalid_characters' })),
    );
    // The detail names the character and where it is, and repeats nothing of the text.
    for (const e of p.errors!) {
      expect(e.detail).toMatch(
        /^Holds U\+[0-9A-F]{4,6} \(a (control character|lone surrogate|non-character)\) at character \d+;/,
      );
      expect(e.detail).not.toMatch(/inside|here|ring|red|shop|xxxx/);
    }
  });

  it('names the first refused character and counts characters, not UTF-16 units', async () => {
    const response = await post(stack, '/send', body({ text: '"😀😀 \\u0007 \\u0000"' }), {
      'x-api-key': key,
    });
    const [error] = (await problem(response)).errors!;
    expect(error!.detail).toMatch(/^Holds U\+0007 \(a control character\) at character 4;/);
  });

  it('accepts tab, line feed, carriage return, emoji, format characters among visible ones and U+FFFD', async () => {
    const texts = [
      'a\tb\nc\r\nd',
      '😀 \u{1F3FE}',
      'zero\u200bwidth \u202eRTL',
      'replacement \ufffd',
      '\u00a0x',
    ];
    for (const text of texts) {
      const response = await post(
        stack,
        '/send',
        { ...good, text, buttons: [{ text, url: 'https://e.x/' }] },
        {
          'x-api-key': key,
        },
      );
      expect(response.status, JSON.stringify(text)).toBe(202);
    }
  });

  it('a body that is not valid UTF-8 is 400 malformed_json, not text with U+FFFD in it', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"phone_number": "79123456789", "service": "telegram", "text": "broken '),
      Buffer.from([0xff, 0xc0, 0x80, 0xed, 0xa0, 0x80]),
      Buffer.from('"}'),
    ]);
    const response = await fetch(`${stack.gatewayUrl}/api/v1/send`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: bytes,
    });
    expect(response.status).toBe(400);
    expect(await problem(response)).toMatchObject({
      code: 'malformed_json',
      detail: expect.stringMatching(/UTF-8/),
    });
  });

  it('a raw control character inside a JSON string is malformed JSON (JSON requires its escape)', async () => {
    const response = await post(
      stack,
      '/send',
      '{"phone_number": "79123456789", "service": "telegram", "text": "raw \u0000 nul"}',
      { 'x-api-key': key },
    );
    expect(response.status).toBe(400);
    expect(await problem(response)).toMatchObject({ code: 'malformed_json' });
  });
});

describe('bodies that are not JSON objects of the right size', () => {
  it('malformed JSON is 400 malformed_json', async () => {
    const response = await post(stack, '/send', '{"phone_number": "79123456789",', { 'x-api-key': key });
    expect(response.status).toBe(400);
    expect(await problem(response)).toMatchObject({ code: 'malformed_json' });
  });

  it('a missing or wrong Content-Type is 415', async () => {
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded']) {
      const response = await fetch(`${stack.gatewayUrl}/api/v1/send`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': contentType },
        body: JSON.stringify(good),
      });
      expect(response.status).toBe(415);
      expect(await problem(response)).toMatchObject({ code: 'unsupported_media_type' });
    }
    const bare = await fetch(`${stack.gatewayUrl}/api/v1/send`, {
      method: 'POST',
      headers: { 'x-api-key': key },
      body: new Blob([JSON.stringify(good)]),
    });
    expect(bare.status).toBe(415);
  });

  it('a body over the limit is 413', async () => {
    const response = await post(stack, '/send', { ...good, text: 'x'.repeat(30_000) }, { 'x-api-key': key });
    expect(response.status).toBe(413);
    expect(await problem(response)).toMatchObject({ code: 'body_too_large' });
  });

  it('an unknown path is a 404 problem; another method on a known path a 405 that names the allowed ones', async () => {
    const response = await post(stack, '/sendd', good, { 'x-api-key': key });
    expect(response.status).toBe(404);
    expect(await problem(response)).toMatchObject({ code: 'not_found' });
    const wrongMethod = await fetch(`${stack.gatewayUrl}/api/v1/send`);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    expect(await problem(wrongMethod)).toMatchObject({ code: 'method_not_allowed' });
    const deleteEvent = await fetch(`${stack.gatewayUrl}/api/v1/events/${randomUUID()}`, {
      method: 'DELETE',
    });
    expect(deleteEvent.status).toBe(405);
    expect(deleteEvent.headers.get('allow')).toBe('GET, HEAD');
  });
});
