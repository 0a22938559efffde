/** Markup that is already safe; everything else interpolated into `html` is escaped. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Value = Html | string | number | boolean | null | undefined | Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** A template tag: bot-sent text and names can never become markup (a message may contain `<script>`). */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new Html(out);
}

/** Only http(s) and tg links become clickable; anything else is shown as text. */
export function safeHref(url: string): string | undefined {
  return /^(https?:|tg:)/i.test(url) ? url : undefined;
}

const C0 =
  'NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US'.split(
    ' ',
  );

/** A character text may not hold, named: `NUL`, `ESC`, `DEL`, `U+0085`, `U+D800`, `U+FFFE`; undefined for the others. */
function controlName(cp: number): string | undefined {
  if (cp === 0x09 || cp === 0x0a || cp === 0x0d) return undefined;
  if (cp < 0x20) return C0[cp];
  if (cp === 0x7f) return 'DEL';
  const refused =
    (cp >= 0x80 && cp <= 0x9f) ||
    (cp >= 0xd800 && cp <= 0xdfff) ||
    (cp >= 0xfdd0 && cp <= 0xfdef) ||
    (cp & 0xfffe) === 0xfffe;
  return refused ? `U+${cp.toString(16).toUpperCase().padStart(4, '0')}` : undefined;
}

/**
 * Outside text as a person can read it: each character text may not hold (a control but tab and line breaks, a
 * lone surrogate, a non-character) as a marked name (`NUL`, `ESC`, `U+D800`), no font needed; and at most `max`
 * characters, then how long it really was.
 */
export function shown(text: string, max: number): Html {
  const chars = [...text];
  let out = '';
  for (const c of chars.slice(0, max)) {
    const name = controlName(c.codePointAt(0)!);
    out += name
      ? `<span class="control" title="a character no text should hold">${name}</span>`
      : escapeHtml(c);
  }
  if (chars.length > max) out += escapeHtml(`… (${chars.length} characters)`);
  return new Html(out);
}
