// A service built the way every service is: runService, a lifecycle, an HTTP app. FAIL_START makes it
// fail during start-up; SLOW_STOP_MS makes one component slow to stop.
import { Registry } from 'prom-client';
import { createHttpApp, listen, runService } from '../src/index.js';

await runService({ name: 'tiny', shutdownTimeoutMs: 2_000 }, async ({ logger, lifecycle }) => {
  let ready = false;
  lifecycle.onStop('first-started', () => logger.info('stopping first-started'));
  const app = createHttpApp({ logger, registry: new Registry(), readiness: [], isReady: () => ready });
  const server = await listen(app, '127.0.0.1', 0);
  lifecycle.onStop('http', () => server.close());
  lifecycle.onStop('slow', () => new Promise((r) => setTimeout(r, Number(process.env.SLOW_STOP_MS ?? 0))));
  if (process.env.FAIL_START) throw new Error('cannot reach the database');
  ready = true;
  console.log(`PORT=${server.port}`);
});
