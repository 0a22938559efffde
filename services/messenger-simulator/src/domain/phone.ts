/** Digits only, 10 to 15 of them; `+`, spaces, dashes and brackets are dropped. */
export function normalizePhone(input: string): string | undefined {
  const digits = input
    .trim()
    .replace(/^\+/, '')
    .replace(/[\s()-]/g, '');
  return /^\d{10,15}$/.test(digits) ? digits : undefined;
}
