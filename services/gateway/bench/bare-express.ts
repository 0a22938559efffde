// The baseline: express parsing the same JSON body and answering 202 with a fresh UUID, nothing else.
import { randomUUID } from 'node:crypto';
import express from 'express';

const app = express();
app.post('/api/v1/send', express.json({ limit: 65_536 }), (_req, res) => {
  res.status(202).json({ status: 'accepted', event_id: randomUUID(), data: { state: 'new' } });
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('ready'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
