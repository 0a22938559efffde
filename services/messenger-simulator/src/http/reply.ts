import type { Response } from 'express';

/** Writes a JSON answer directly (the bot API hot path: no content negotiation or ETag work). */
export function replyJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** Writes bytes as they are, declared JSON: what a hostile answer sends (they may be no JSON, or no UTF-8). */
export function replyBytes(res: Response, status: number, body: Uint8Array): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.end(body);
}
