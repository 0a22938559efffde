import { isCleanText } from '@mds/contracts';
import { describe, expect, it } from 'vitest';
import { cleanAnswer, cleanCursor, cleanFact, DESCRIPTION_CHARS, ID_CHARS } from './outside-text.js';
import { noAnswer, scrubError } from '@mds/messengers';

const HOSTILE = 'nul \u0000 bel \u0007 esc \u001b[31m lone \ud800 nc \ufffe end';
const CLEANED = 'nul \ufffd bel \ufffd esc \ufffd[31m lone \ufffd nc \ufffd end';

describe('what a messenger adapter hands the shared mechanism, cleaned', () => {
  it('an answer: its description or message id, every kind', () => {
    expect(cleanAnswer({ kind: 'rejected', code: 'INVALID_MESSAGE', description: HOSTILE })).toEqual({
      kind: 'rejected',
      code: 'INVALID_MESSAGE',
      description: CLEANED,
    });
    expect(cleanAnswer({ kind: 'sent', providerMessageId: 'mid.\u0000' })).toEqual({
      kind: 'sent',
      providerMessageId: 'mid.\ufffd',
    });
    for (const kind of ['unauthorized', 'rate-limited', 'transient', 'unconfirmed'] as const)
      expect(cleanAnswer({ kind, description: HOSTILE })).toMatchObject({ kind, description: CLEANED });
  });

  it('a megabyte of description comes to its bound', () => {
    const answer = cleanAnswer({ kind: 'transient', description: `${HOSTILE} `.repeat(40_000) });
    expect(answer.kind === 'transient' && answer.description.length).toBe(DESCRIPTION_CHARS);
    expect(answer.kind === 'transient' && isCleanText(answer.description)).toBe(true);
  });

  it("an update's ids and phone, and a cursor", () => {
    expect(
      cleanFact({
        kind: 'contact-shared',
        chatId: '1\u0000',
        userId: '2',
        updateId: 'x'.repeat(10_000),
        phone: '7',
      }),
    ).toEqual({
      kind: 'contact-shared',
      chatId: '1\ufffd',
      userId: '2',
      updateId: 'x'.repeat(ID_CHARS),
      phone: '7',
    });
    expect(
      cleanFact({ kind: 'blocked', chatId: '1', userId: '\ud800', updateId: 'u', reason: 'stopped' }),
    ).toEqual({
      kind: 'blocked',
      chatId: '1',
      userId: '\ufffd',
      updateId: 'u',
      reason: 'stopped',
    });
    expect(cleanCursor('12\u0000')).toBe('12\ufffd');
    expect(cleanCursor(undefined)).toBeUndefined();
  });

  it('an error that quotes a hostile answer: scrubbed of secrets, cleaned, bounded, at every level', () => {
    const cause = Object.assign(new Error(`invalid json: "boom\u0000 ${'\ufffe'.repeat(100_000)}"`), {
      code: 'E\u0007',
    });
    const error = scrubError(Object.assign(new Error(`token SECRET-TOKEN-1 ${HOSTILE}`), { cause }), [
      'SECRET-TOKEN-1',
    ]);
    expect(error.message).toBe(`token [redacted] ${CLEANED}`);
    const inner = error.cause as Error & { code: string };
    expect(isCleanText(inner.message) && inner.message.length <= 2_000).toBe(true);
    expect(inner.code).toBe('E\ufffd');
    expect(isCleanText(noAnswer(error).description)).toBe(true);
  });
});
