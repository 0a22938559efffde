import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/** The one length the public API accepts, as the spec's tables say ("11 digits"). */
export const API_PHONE_DIGITS = 11;

export type PhoneCheck =
  | { ok: true; phone: string }
  | {
      ok: false;
      reason: 'not_a_phone_number' | 'wrong_length' | 'national_format' | 'not_a_valid_number';
      detail: string;
    };

// Spacing and punctuation people type around a number; they never change which number it is.
const DECORATION = /[\s\-().]/g;

/**
 * A phone number from an API caller: international format, digits only, 11 digits (e.g. 79123456789).
 * A leading "+" and spaces, dashes, dots and parentheses are accepted and dropped. A national form such as
 * the Russian 8XXXXXXXXXX is refused, not guessed at: an 11-digit number starting with 8 is also the
 * international form of other countries' numbers (81 Japan, 82 Korea, 86 China...). The number must be a
 * real number by libphonenumber's full metadata. Returns E.164 digits without "+".
 */
export function normalizeApiPhone(input: string): PhoneCheck {
  const compact = input.trim().replace(DECORATION, '');
  const digits = compact.startsWith('+') ? compact.slice(1) : compact;
  if (!/^\d+$/.test(digits)) {
    return {
      ok: false,
      reason: 'not_a_phone_number',
      detail: 'A phone number has digits only (international format, e.g. 79123456789).',
    };
  }
  if (digits.length !== API_PHONE_DIGITS) {
    return {
      ok: false,
      reason: 'wrong_length',
      detail: `A phone number has ${API_PHONE_DIGITS} digits in international format (e.g. 79123456789); this one has ${digits.length}.`,
    };
  }
  const parsed = parsePhoneNumberFromString(`+${digits}`);
  if (parsed?.isValid()) return { ok: true, phone: parsed.number.slice(1) };
  const national = parsePhoneNumberFromString(digits, 'RU');
  if (digits.startsWith('8') && national?.isValid()) {
    return {
      ok: false,
      reason: 'national_format',
      detail: `Use the international format: ${national.number.slice(1)} instead of ${digits}.`,
    };
  }
  return {
    ok: false,
    reason: 'not_a_valid_number',
    detail: `${digits} is not a valid phone number in international format.`,
  };
}

/**
 * A phone number a messenger reports (Telegram contact.phone_number, the TEL line of a MAX vCard): always
 * international, with or without "+". Never read with a default country (that turns 380... into +7380...).
 * Returns E.164 digits without "+", or null when it is not a valid number.
 */
export function normalizeMessengerPhone(input: string): string | null {
  const trimmed = input.trim();
  const international = trimmed.startsWith('+') ? trimmed : `+${trimmed.replace(/\D/g, '')}`;
  const parsed = parsePhoneNumberFromString(international);
  return parsed?.isValid() ? parsed.number.slice(1) : null;
}
