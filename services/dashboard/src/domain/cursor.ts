/**
 * Where a page of a newest-first list ends: the sort time (milliseconds) and the id of its last row, so the
 * next page starts strictly after it even when many rows share a millisecond.
 */
export interface Cursor {
  at: number;
  id: string;
}

const CURSOR = /^(\d{1,16})\.([A-Za-z0-9_-]{1,64})$/;

export function encodeCursor(cursor: Cursor): string {
  return `${cursor.at}.${cursor.id}`;
}

/** The cursor a client sent back, or undefined when it is not one of ours. */
export function decodeCursor(text: string): Cursor | undefined {
  const match = CURSOR.exec(text);
  if (!match) return undefined;
  return { at: Number(match[1]), id: match[2]! };
}
