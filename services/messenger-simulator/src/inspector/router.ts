import type { IncomingHttpHeaders } from 'node:http';
import express, { type Request, type Response } from 'express';
import type { SimulatorContext } from '../context.js';
import { replyJson } from '../http/reply.js';
import { INSPECTOR_NAME } from './inspector.js';
import { renderInspector, renderInspectorIndex } from './page.js';

/** Webhook bodies of this service are well under 1 KB; a receiver keeps nothing bigger. */
export const INSPECTOR_BODY_LIMIT_BYTES = 64 * 1024;

function flatHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/**
 * The body, or undefined when it is over the limit. Past the limit the rest is read and dropped rather
 * than the connection cut, so the sender gets its 413.
 */
function readBody(req: Request, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.once('end', () => resolve(size > limit ? undefined : Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

function badName(res: Response, name: string): boolean {
  if (INSPECTOR_NAME.test(name)) return false;
  replyJson(res, 400, {
    error: {
      code: 'invalid_request',
      message: `name: 1-64 letters, digits, "_", "." or "-" (got "${name}")`,
    },
  });
  return true;
}

/**
 * `POST /inspector/:name/hooks` receives webhooks (answering 200 at once, whatever they are);
 * `GET /inspector` and `GET /inspector/:name` show them. Secrets and the JSON read are in the control API.
 */
export function inspectorRouter(ctx: SimulatorContext): express.Router {
  const { inspector } = ctx;
  const router = express.Router();

  router.post('/inspector/:name/hooks', async (req: Request<{ name: string }>, res) => {
    const { name } = req.params;
    if (badName(res, name)) return;
    const raw = await readBody(req, INSPECTOR_BODY_LIMIT_BYTES);
    if (!raw) {
      return replyJson(res, 413, {
        error: { code: 'invalid_request', message: `body over ${INSPECTOR_BODY_LIMIT_BYTES} bytes` },
      });
    }
    const delivery = inspector.receive(name, {
      method: req.method,
      headers: flatHeaders(req.headers),
      body: raw.toString('utf8'),
      at: ctx.now(),
    });
    ctx.metrics.inspectedWebhooks.inc({ verified: String(delivery.verified) });
    ctx.logger.debug(
      { inspector: name, seq: delivery.seq, webhookId: delivery.webhookId, reason: delivery.reason },
      'webhook received',
    );
    replyJson(res, 200, { received: delivery.seq, verified: delivery.verified, reason: delivery.reason });
  });
  router.all('/inspector/:name/hooks', (_req, res) => {
    res.setHeader('Allow', 'POST');
    replyJson(res, 405, {
      error: { code: 'method_not_allowed', message: 'webhooks are POSTed here; see them at the page' },
    });
  });

  router.get('/inspector', (_req, res) => {
    res.type('html').send(renderInspectorIndex(inspector, ctx.publicUrl()));
  });
  router.get('/inspector/:name', (req: Request<{ name: string }>, res) => {
    if (badName(res, req.params.name)) return;
    res.type('html').send(renderInspector(inspector, req.params.name, ctx.publicUrl()));
  });
  return router;
}
