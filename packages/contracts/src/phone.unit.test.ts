import { describe, expect, it } from 'vitest';
import { normalizeApiPhone, normalizeMessengerPhone } from './phone.js';

describe('normalizeApiPhone', () => {
  it.each([
    ['79123456789', '79123456789'],
    ['+79123456789', '79123456789'],
    ['+7 912 345-67-89', '79123456789'],
    ['7 (912) 345 67 89', '79123456789'],
    [' 79123456789 ', '79123456789'],
    ['81312345678', '81312345678'], // Japan, not a Russian 8-prefixed number
  ])('accepts %j as %s', (input, phone) => {
    expect(normalizeApiPhone(input)).toEqual({ ok: true, phone });
  });

  it.each([
    ['89123456789', 'national_format', /79123456789 instead of 89123456789/],
    ['7912345678', 'wrong_length', /has 10/],
    ['791234567890', 'wrong_length', /has 12/],
    ['380501234567', 'wrong_length', /has 12/],
    ['7912345678a', 'not_a_phone_number', /digits only/],
    ['', 'not_a_phone_number', /digits only/],
    ['+', 'not_a_phone_number', /digits only/],
    ['70000000000', 'not_a_valid_number', /not a valid phone number/],
    ['++79123456789', 'not_a_phone_number', /digits only/],
  ])('refuses %j (%s)', (input, reason, detail) => {
    const result = normalizeApiPhone(input);
    expect(result).toMatchObject({ ok: false, reason });
    expect(result.ok ? '' : result.detail).toMatch(detail);
  });
});

describe('normalizeMessengerPhone', () => {
  it.each([
    ['+79123456789', '79123456789'],
    ['79123456789', '79123456789'],
    ['380501234567', '380501234567'], // never read as +7 380...
    ['+380 50 123 4567', '380501234567'],
  ])('reads %j as %s', (input, phone) => {
    expect(normalizeMessengerPhone(input)).toBe(phone);
  });

  it.each(['89123456789', '+89123456789', 'abc', '+70000000000'])('refuses %j', (input) => {
    expect(normalizeMessengerPhone(input)).toBeNull();
  });
});
