import express, { type Router } from 'express';
import type { UpdateIngestion } from '../application/updates.js';

/**
 * Webhook mode: POST /updates/:botId, checked by the per-bot secret the messenger echoes. The secret is
 * checked before the body is read: a wrong one is refused with 401 without parsing (or even receiving) a
 * byte of it, and the connection is closed rather than drained.
 */
export function updatesRouter(updates: UpdateIngestion): Router {
  const router = express.Router();
  const checkSecret: express.RequestHandler = (req, res, next) => {
    const given = Buffer.from(req.get(updates.webhookSecretHeader) ?? '');
    if (!updates.acceptsSecret(req.params.botId as string, given)) {
      res.setHeader('Connection', 'close');
      res.status(401).json({ error: 'wrong secret' });
      return;
    }
    next();
  };
  router.post('/updates/:botId', checkSecret, express.json({ limit: '1mb' }), async (req, res, next) => {
    try {
      // Answered only after the facts are in Kafka: a failure here makes the messenger push again.
      if ((await updates.receivePush(String(req.params.botId), req.body)) === 'unknown-bot') {
        res.status(404).json({ error: 'unknown bot' });
        return;
      }
      res.status(200).json({ ok: true });
    } catch (error) {
      next(error);
    }
  });
  return router;
}
