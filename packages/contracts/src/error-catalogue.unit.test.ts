import { describe, expect, it } from 'vitest';
import {
  errorCatalogue,
  explainError,
  messageErrorCatalogue,
  messageErrorCodes,
  phoneChangeErrorCatalogue,
  phoneChangeErrorCodes,
} from './index.js';

describe('the error catalogue', () => {
  it('explains exactly the codes the contracts define, messages and phone changes apart', () => {
    expect(Object.keys(messageErrorCatalogue).sort()).toEqual(Object.keys(messageErrorCodes).sort());
    expect(Object.keys(phoneChangeErrorCatalogue).sort()).toEqual(Object.keys(phoneChangeErrorCodes).sort());
  });

  it('says what happened and what to do, in English and in Russian, for every code', () => {
    for (const [code, languages] of Object.entries(errorCatalogue)) {
      for (const language of ['en', 'ru'] as const) {
        const { title, meaning, action } = languages[language];
        for (const text of [title, meaning, action]) {
          expect(text.trim(), `${code} ${language}`).not.toBe('');
          // No code stands in for words, and each text is written in its own language.
          expect(text, `${code} ${language}`).not.toContain(code);
          expect(/[а-яё]/i.test(text), `${code} ${language}: ${text}`).toBe(language === 'ru');
        }
        expect(meaning, `${code} ${language}`).toMatch(/[.!]$/);
        expect(action, `${code} ${language}`).toMatch(/[.!]$/);
      }
    }
  });

  it('explains a known code in the language asked for, and nothing for an unknown one', () => {
    expect(explainError('CLIENT_NOT_FOUND', 'en')?.title).toBe('Nobody with this number');
    expect(explainError('CLIENT_NOT_FOUND', 'ru')?.title).toBe('Нет клиента с этим номером');
    expect(explainError('NEW_PHONE_IN_USE', 'en')).toBe(phoneChangeErrorCatalogue.NEW_PHONE_IN_USE.en);
    expect(explainError('SOMETHING_NEW', 'en')).toBeUndefined();
    expect(explainError('__proto__', 'en')).toBeUndefined();
    expect(explainError('toString', 'ru')).toBeUndefined();
  });
});
