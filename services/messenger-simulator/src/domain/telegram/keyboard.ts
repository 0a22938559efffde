import type { ButtonView } from '../types.js';
import { tg, type TelegramError } from './errors.js';

export type ParsedMarkup =
  | { kind: 'inline'; rows: ButtonView[][]; wire: unknown }
  | { kind: 'reply'; rows: ButtonView[][] }
  | { kind: 'remove' }
  | { kind: 'force_reply' };

/** The fields that give an inline button its action; exactly one must be present. */
const INLINE_ACTIONS = [
  'url',
  'callback_data',
  'web_app',
  'login_url',
  'switch_inline_query',
  'switch_inline_query_current_chat',
  'switch_inline_query_chosen_chat',
  'copy_text',
  'callback_game',
  'pay',
] as const;

/** Community figure (about 100 buttons in all); the Bot API documents no limit. */
export const MAX_INLINE_BUTTONS = 100;

const URL_PROTOCOLS = new Set(['http:', 'https:', 'tg:']);

export function isValidButtonUrl(url: string): boolean {
  const parsed = URL.parse(url);
  if (!parsed || !URL_PROTOCOLS.has(parsed.protocol)) return false;
  return parsed.protocol === 'tg:' || parsed.hostname !== '';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isArrayOfArrays(value: unknown): value is unknown[][] {
  return Array.isArray(value) && value.every((row) => Array.isArray(row));
}

function inlineButton(raw: unknown): ButtonView | TelegramError {
  if (!isObject(raw)) return tg.buttonNotObject();
  if (typeof raw.text !== 'string') return tg.buttonField('text');
  const action = INLINE_ACTIONS.find((field) => raw[field] !== undefined);
  if (!action) return tg.textButtonInInline();
  if (action === 'url') {
    if (typeof raw.url !== 'string') return tg.buttonField('url');
    if (!isValidButtonUrl(raw.url)) return tg.buttonUrlInvalid();
    return { text: raw.text, url: raw.url };
  }
  if (action === 'callback_data') {
    if (typeof raw.callback_data !== 'string') return tg.buttonField('callback_data');
    const bytes = new TextEncoder().encode(raw.callback_data).length;
    if (bytes < 1 || bytes > 64) return tg.buttonDataInvalid();
  }
  return { text: raw.text, kind: action };
}

function replyButton(raw: unknown): ButtonView | TelegramError {
  if (typeof raw === 'string') return { text: raw };
  if (!isObject(raw) || typeof raw.text !== 'string') return tg.replyKeyboardShape();
  const kind = [
    'request_contact',
    'request_location',
    'request_users',
    'request_chat',
    'request_poll',
    'web_app',
  ].find((field) => raw[field] !== undefined && raw[field] !== false);
  return kind ? { text: raw.text, kind } : { text: raw.text };
}

function rowsOf(
  keyboard: unknown[][],
  parse: (raw: unknown) => ButtonView | TelegramError,
): ButtonView[][] | TelegramError {
  const rows: ButtonView[][] = [];
  for (const row of keyboard) {
    const buttons: ButtonView[] = [];
    for (const raw of row) {
      const button = parse(raw);
      if ('ok' in button) return button;
      buttons.push(button);
    }
    rows.push(buttons);
  }
  return rows;
}

/**
 * Reads `reply_markup` (already JSON-decoded) the way the Bot API does: an inline keyboard, a reply
 * keyboard (e.g. the `request_contact` button), a keyboard removal or a forced reply.
 */
export function parseReplyMarkup(value: unknown): ParsedMarkup | TelegramError {
  if (!isObject(value)) return tg.markupNotJson();
  if (value.inline_keyboard !== undefined) {
    if (!isArrayOfArrays(value.inline_keyboard)) return tg.inlineKeyboardShape();
    const rows = rowsOf(value.inline_keyboard, inlineButton);
    if ('ok' in rows) return rows;
    if (rows.reduce((n, row) => n + row.length, 0) > MAX_INLINE_BUTTONS) return tg.markupTooLong();
    return { kind: 'inline', rows, wire: { inline_keyboard: value.inline_keyboard } };
  }
  if (value.keyboard !== undefined) {
    if (!isArrayOfArrays(value.keyboard)) return tg.replyKeyboardShape();
    const rows = rowsOf(value.keyboard, replyButton);
    if ('ok' in rows) return rows;
    return { kind: 'reply', rows };
  }
  if (value.remove_keyboard === true) return { kind: 'remove' };
  if (value.force_reply === true) return { kind: 'force_reply' };
  return tg.markupNotJson();
}
