import { describe, expect, it } from 'vitest';
import { noAnswer } from './no-answer.js';

describe('a call without an answer', () => {
  it('is transient when the request surely never left: a refused connection, an unknown host', () => {
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    expect(noAnswer(refused)).toMatchObject({ kind: 'transient' });
    // grammY wraps the fetch error in `error`.
    const grammy = Object.assign(new Error("Network request for 'sendMessage' failed!"), {
      error: Object.assign(new Error('getaddrinfo ENOTFOUND api.telegram.org'), { code: 'ENOTFOUND' }),
    });
    expect(noAnswer(grammy)).toMatchObject({
      kind: 'transient',
      description: expect.stringContaining('ENOTFOUND'),
    });
  });

  it('is unconfirmed when the request may have been taken: a timeout, a reset, anything else', () => {
    const timeout = Object.assign(new Error('The operation was aborted due to timeout'), {
      name: 'TimeoutError',
    });
    expect(noAnswer(timeout)).toMatchObject({ kind: 'unconfirmed' });
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    expect(noAnswer(reset)).toMatchObject({ kind: 'unconfirmed', description: 'ECONNRESET: socket hang up' });
  });
});
