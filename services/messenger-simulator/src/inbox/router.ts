import express from 'express';
import type { SimulatorContext } from '../context.js';
import { renderInbox } from './page.js';

/** GET /: the web inbox, rendered on the server; its script talks to the control API. */
export function inboxRouter(ctx: SimulatorContext): express.Router {
  const router = express.Router();
  router.get('/', (_req, res) => {
    res.type('html').send(renderInbox(ctx.world, ctx.publicUrl()));
  });
  return router;
}
