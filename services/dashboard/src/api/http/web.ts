import { existsSync } from 'node:fs';
import { join } from 'node:path';
import express, { type Router } from 'express';
import helmet from 'helmet';

/** A year: browsers that saw the dashboard over https never try it over plain http for that long. */
const HSTS_MAX_AGE_SECONDS = 31_536_000;

/**
 * The built web application: hashed assets cached for good, and index.html (never cached) for every other
 * path, so the browser's router owns /messages/..., /keys and the rest. With `hsts` (the dashboard is served
 * over https: COOKIE_SECURE) every page says so (Strict-Transport-Security), so a browser never sends the
 * session over plain http to a network that strips TLS; without it (plain http on a private network or
 * locally) it says nothing a browser would then hold against that host.
 */
export function webRouter(root: string, o: { hsts: boolean }): Router {
  const router = express.Router();
  router.use(
    helmet({
      contentSecurityPolicy: {
        directives: {
          defaultSrc: ["'self'"],
          scriptSrc: ["'self'"],
          // Mantine writes its theme's CSS variables into a <style> element.
          styleSrc: ["'self'", "'unsafe-inline'"],
          imgSrc: ["'self'", 'data:'],
          connectSrc: ["'self'"],
          frameAncestors: ["'none'"],
          formAction: ["'self'"],
          upgradeInsecureRequests: null,
        },
      },
      strictTransportSecurity: o.hsts ? { maxAge: HSTS_MAX_AGE_SECONDS, includeSubDomains: false } : false,
    }),
  );
  const index = join(root, 'index.html');
  router.use(
    '/assets',
    express.static(join(root, 'assets'), { immutable: true, maxAge: '365d', index: false }),
  );
  router.use(express.static(root, { index: false, maxAge: 0 }));
  router.get(/^\/(?!api\/|admin\/).*/, (_req, res) => {
    if (!existsSync(index)) {
      res.status(503).type('text/plain').send('The web application is not built: run npm run build.');
      return;
    }
    res.setHeader('Cache-Control', 'no-store');
    res.sendFile(index);
  });
  return router;
}
