import { describe, expect, it } from 'vitest';
import { messengerLength, normalizeButtonUrl, showsNothing } from './content-rules.js';

describe('text that shows nothing', () => {
  it('is empty, white space, or only invisible characters', () => {
    for (const text of [
      '',
      ' \n\t',
      '\u200B',
      '\uFEFF',
      '\u200C\u200D\u2060',
      '\u00AD',
      '\u202E\u202D',
      '\u3164',
      '\u2800',
      '\u115F\u1160',
      '\u034F',
      '\u{E0041}',
      '\u3000\u00A0',
    ]) {
      expect(showsNothing(text), JSON.stringify(text)).toBe(true);
    }
  });

  it('is not text with anything visible, whatever surrounds it', () => {
    for (const text of ['a', '\u200Bhi\u200B', '😀', '.', 'ё', '\u0301a']) {
      expect(showsNothing(text), JSON.stringify(text)).toBe(false);
    }
  });
});

describe('length as the messengers count it', () => {
  it('is UTF-16 code units: an emoji outside the BMP counts 2, a combining mark 1', () => {
    expect(messengerLength('abc')).toBe(3);
    expect(messengerLength('😀')).toBe(2);
    expect(messengerLength('e\u0301')).toBe(2);
    expect(messengerLength('привет')).toBe(6);
  });
});

describe('button URLs', () => {
  it('are stored in their normalized form', () => {
    expect(normalizeButtonUrl('HTTPS://Example.COM:443/a/../b c?q=ü#f')).toEqual({
      ok: true,
      href: 'https://example.com/b%20c?q=%C3%BC#f',
    });
    expect(normalizeButtonUrl('http://пример.рф/')).toEqual({
      ok: true,
      href: 'http://xn--e1afmkfd.xn--p1ai/',
    });
    expect(normalizeButtonUrl('https://example.com\\path')).toEqual({
      ok: true,
      href: 'https://example.com/path',
    });
  });

  it('refuse userinfo, control and invisible characters, other schemes and relative URLs', () => {
    const code = (raw: string) => {
      const checked = normalizeButtonUrl(raw);
      return checked.ok ? 'ok' : checked.code;
    };
    expect(code('https://user@example.com/')).toBe('url_userinfo');
    expect(code('https://user:pw@example.com/')).toBe('url_userinfo');
    expect(code('https://:pw@example.com/')).toBe('url_userinfo');
    expect(code('https://example.com/\u0000')).toBe('url_control_characters');
    expect(code('https://exa\tmple.com/')).toBe('url_control_characters');
    expect(code('https://example.com/\r\nSet-Cookie: x')).toBe('url_control_characters');
    expect(code('https://example.com/\u007F')).toBe('url_control_characters');
    expect(code('https://example.com/\u202Egnp.exe')).toBe('url_control_characters');
    expect(code('https://exa\u200Bmple.com/')).toBe('url_control_characters');
    expect(code('javascript:alert(1)')).toBe('invalid_url');
    expect(code('ftp://example.com/f')).toBe('invalid_url');
    expect(code('/orders/1')).toBe('invalid_url');
    expect(code('https://')).toBe('invalid_url');
    expect(code(`https://example.com/${'a'.repeat(2028)}`)).toBe('ok');
    expect(code(`https://example.com/${' a'.repeat(700)}`)).toBe('url_too_long');
  });
});
