import type { IncomingMessage } from 'node:http';

/** Bot API bodies are small (text is at most 4096 characters); anything this big is not a call we serve. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

export class BodyTooLarge extends Error {
  constructor() {
    super('request body too large');
  }
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

export function readRawBody(req: IncomingMessage, limit = BODY_LIMIT_BYTES): Promise<Buffer> {
  if (!hasBody(req)) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new BodyTooLarge());
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/** The query string as a plain object; a repeated name keeps its first value. */
export function queryParams(url: string): Record<string, string> {
  const at = url.indexOf('?');
  const out: Record<string, string> = {};
  if (at < 0) return out;
  for (const [key, value] of new URLSearchParams(url.slice(at + 1))) {
    if (!(key in out)) out[key] = value;
  }
  return out;
}

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * The parameters of a Bot API call, from the query string and the body (JSON, form-encoded or
 * multipart); body values win. A body that does not parse adds nothing.
 */
export async function readTelegramParams(req: IncomingMessage): Promise<Record<string, unknown>> {
  const params: Record<string, unknown> = queryParams(req.url ?? '');
  const raw = await readRawBody(req);
  if (raw.length === 0) return params;
  const type = mediaType(req);
  if (type === 'application/json') {
    try {
      const body: unknown = JSON.parse(raw.toString('utf8'));
      if (typeof body === 'object' && body !== null && !Array.isArray(body)) Object.assign(params, body);
    } catch {
      // not JSON: no parameters from the body
    }
  } else if (type === 'application/x-www-form-urlencoded') {
    for (const [key, value] of new URLSearchParams(raw.toString('utf8'))) params[key] = value;
  } else if (type === 'multipart/form-data') {
    try {
      const form = await new Response(new Uint8Array(raw), {
        headers: { 'content-type': req.headers['content-type'] ?? '' },
      }).formData();
      for (const [key, value] of form) if (typeof value === 'string') params[key] = value;
    } catch {
      // a malformed multipart body: no parameters from it
    }
  }
  return params;
}

/** A JSON body (MAX): undefined when empty, `invalid` when it does not parse. */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const raw = await readRawBody(req);
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch {
    return INVALID_JSON;
  }
}

export const INVALID_JSON = Symbol('invalid JSON');
