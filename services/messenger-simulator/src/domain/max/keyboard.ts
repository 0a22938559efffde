import type { ButtonView } from '../types.js';
import { mx, type MaxError } from './errors.js';

const BUTTON_TYPES = new Set([
  'callback',
  'link',
  'request_contact',
  'request_geo_location',
  'open_app',
  'message',
  'clipboard',
]);
/** These take more room: at most 3 of them per row. */
const WIDE_BUTTONS = new Set(['link', 'open_app', 'request_geo_location', 'request_contact']);

export const KEYBOARD_LIMITS = {
  rows: 30,
  buttons: 210,
  perRow: 7,
  widePerRow: 3,
  text: 128,
  url: 2048,
  callbackPayload: 1024,
};

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function button(raw: unknown): ButtonView | MaxError {
  if (!isObject(raw) || typeof raw.type !== 'string' || !BUTTON_TYPES.has(raw.type)) {
    return mx.payload(`Unknown button type: ${isObject(raw) ? String(raw.type) : typeof raw}`);
  }
  if (typeof raw.text !== 'string') return mx.payload("Field 'text' is required for button");
  const n = raw.text.length;
  if (n < 1) return mx.payload(`Field 'text' size (${n}) must be at least 1`);
  if (n > KEYBOARD_LIMITS.text)
    return mx.payload(`Field 'text' size (${n}) must be at most ${KEYBOARD_LIMITS.text}`);
  if (raw.type === 'link') {
    if (typeof raw.url !== 'string') return mx.payload("Field 'url' is required for link button");
    if (raw.url.length > KEYBOARD_LIMITS.url) {
      return mx.payload(`Field 'url' size (${raw.url.length}) must be at most ${KEYBOARD_LIMITS.url}`);
    }
    const url = URL.parse(raw.url);
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) {
      return mx.payload('Must have only http/https links format in buttons');
    }
    return { text: raw.text, url: raw.url };
  }
  if (raw.type === 'callback') {
    if (typeof raw.payload !== 'string') return mx.payload("Field 'payload' is required for callback button");
    if (raw.payload.length > KEYBOARD_LIMITS.callbackPayload) {
      return mx.payload(
        `Field 'payload' size (${raw.payload.length}) must be at most ${KEYBOARD_LIMITS.callbackPayload}`,
      );
    }
  }
  return { text: raw.text, kind: raw.type };
}

/** An `inline_keyboard` attachment's buttons, within MAX's limits (30 rows, 210 buttons, 7 or 3 a row). */
export function keyboardRows(payload: unknown): ButtonView[][] | MaxError {
  const buttons = isObject(payload) ? payload.buttons : undefined;
  if (!Array.isArray(buttons) || !buttons.every((row) => Array.isArray(row))) {
    return mx.payload("Field 'buttons' must be an array of button rows");
  }
  const rows = buttons as unknown[][];
  if (rows.length > KEYBOARD_LIMITS.rows) {
    return mx.payload(`Field 'buttons' size (${rows.length}) must be at most ${KEYBOARD_LIMITS.rows}`);
  }
  const total = rows.reduce((n, row) => n + row.length, 0);
  if (total > KEYBOARD_LIMITS.buttons) {
    return mx.payload(`Keyboard has ${total} buttons, must be at most ${KEYBOARD_LIMITS.buttons}`);
  }
  const out: ButtonView[][] = [];
  for (const [index, row] of rows.entries()) {
    const parsed: ButtonView[] = [];
    for (const raw of row) {
      const b = button(raw);
      if ('status' in b) return b;
      parsed.push(b);
    }
    if (parsed.length > KEYBOARD_LIMITS.perRow) {
      return mx.payload(
        `Row ${index} has ${parsed.length} buttons, must be at most ${KEYBOARD_LIMITS.perRow}`,
      );
    }
    const wide = row.filter((raw) => isObject(raw) && WIDE_BUTTONS.has(raw.type as string)).length;
    if (wide > KEYBOARD_LIMITS.widePerRow) {
      return mx.payload(
        `Row ${index} has ${wide} link, open_app, request_contact or request_geo_location buttons, must be at most ${KEYBOARD_LIMITS.widePerRow}`,
      );
    }
    out.push(parsed);
  }
  return out;
}

/**
 * `attachments`: only inline keyboards are simulated (media need uploads the simulator does not offer).
 * Returns the keyboard rows to show the person, or the error.
 */
export function readAttachments(value: unknown): ButtonView[][] | MaxError {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return mx.payload("Field 'attachments' must be an array");
  let rows: ButtonView[][] = [];
  for (const attachment of value) {
    if (!isObject(attachment) || typeof attachment.type !== 'string') {
      return mx.payload("Field 'type' is required for attachment");
    }
    if (attachment.type !== 'inline_keyboard') {
      return mx.payload(`Attachment type '${attachment.type}' is not supported by the simulator`);
    }
    const parsed = keyboardRows(attachment.payload);
    if ('status' in parsed) return parsed;
    rows = rows.concat(parsed);
  }
  return rows;
}
