// The benchmark's webhook receiver, in a process of its own: paths under /slow/ answer after SLOW_MS, every
// other path at once; GET /stats says how many POSTs each first path segment pair (/fast/3) received.
import { createServer } from 'node:http';

const slowMs = Number(process.env.SLOW_MS ?? 10_000);
const counts: Record<string, number> = {};
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(counts));
    return;
  }
  req.resume();
  req.on('end', () => {
    const key = (req.url ?? '/').split('/').slice(0, 3).join('/');
    const answer = () => {
      counts[key] = (counts[key] ?? 0) + 1;
      res.writeHead(200).end('ok');
    };
    if (key.startsWith('/slow/')) setTimeout(answer, slowMs);
    else answer();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write('listening\n');
});
