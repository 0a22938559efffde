// One process of the floor's bare chain (see floor.ts): a kafkajs hop with nothing of ours in it. Forked
// with its role in argv: consume FROM, POST each record to URL if given, produce to TO if given; the last
// hop tells its parent when records arrived.
import { Agent, request } from 'undici';
import { rawClient, rawHop } from '@mds/kafka/raw';

const [brokers, from, to, groupId, url] = process.argv.slice(2) as [string, string, string, string, string];
const agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });

async function post(): Promise<void> {
  const response = await request(url, { method: 'POST', body: '{}', dispatcher: agent });
  await response.body.dump();
}

const hop = await rawHop({
  kafka: rawClient(brokers.split(','), 'floor'),
  from,
  ...(to !== '-' ? { to } : {}),
  groupId,
  // One call per record, all of a fetch's at once, as the sender and the dispatcher make theirs.
  ...(url !== '-'
    ? { work: (records: number) => Promise.all(Array.from({ length: records }, post)).then(() => undefined) }
    : {}),
  ...(to === '-'
    ? {
        onRecords: (keys: string[]) =>
          process.send?.({ keys, at: performance.timeOrigin + performance.now() }),
      }
    : {}),
});
process.send?.('ready');
process.on('SIGTERM', () => void hop.stop().finally(() => process.exit(0)));
