import { describe, expect, it } from 'vitest';
import { noAnswer } from './no-answer.js';
import { redactSecrets, scrubError } from './scrub.js';

const TOKEN = '7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';

describe('redactSecrets', () => {
  it('takes the token out as is, URL-encoded and JSON-escaped, and any Bot API token path', () => {
    const text = `GET /bot${TOKEN}/getMe; q=${encodeURIComponent(TOKEN)}; other /bot123:abcDEF_-x/sendMessage`;
    const out = redactSecrets(text, [TOKEN]);
    expect(out).not.toContain(TOKEN);
    expect(out).not.toContain(encodeURIComponent(TOKEN));
    expect(out).not.toContain('abcDEF');
    expect(out).toContain('/getMe');
  });

  it('leaves text alone when there is nothing to hide, and ignores values too short to be secrets', () => {
    expect(redactSecrets('chat not found', [TOKEN, 'a'])).toBe('chat not found');
  });
});

describe('scrubError', () => {
  it("redacts every level of the chain and keeps codes, so a refused connection is still 'never sent'", () => {
    const fetchError = Object.assign(new Error(`request to http://h/bot${TOKEN}/sendMessage failed`), {
      code: 'ECONNREFUSED',
      headers: { authorization: TOKEN },
    });
    const httpError = Object.assign(new Error("Network request for 'sendMessage' failed!"), {
      name: 'HttpError',
      error: fetchError,
      payload: { text: 'personal text', secret_token: 'webhook-secret-value' },
    });
    const scrubbed = scrubError(httpError, [TOKEN]);
    const serialized = JSON.stringify({
      ...scrubbed,
      message: scrubbed.message,
      stack: scrubbed.stack,
      cause: scrubbed.cause,
      causeMessage: (scrubbed.cause as Error).message,
    });
    expect(serialized).not.toContain(TOKEN);
    expect(serialized).not.toContain('personal text');
    expect(serialized).not.toContain('webhook-secret-value');
    expect(scrubbed.name).toBe('HttpError');
    expect((scrubbed.cause as { code?: string }).code).toBe('ECONNREFUSED');
    expect(noAnswer(scrubbed).kind).toBe('transient');
  });

  it('turns a thrown non-error into a scrubbed error', () => {
    expect(scrubError(`boom ${TOKEN}`, [TOKEN]).message).toBe('boom [redacted]');
  });
});
