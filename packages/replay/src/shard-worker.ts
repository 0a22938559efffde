// Worker thread entry: reads one shard (see read-shard.ts) and posts progress, then the shard's output.
import { parentPort, workerData } from 'node:worker_threads';
import { readShard, type ShardInput } from './read-shard.js';

const port = parentPort!;
let pending = 0;
let last = 0;
try {
  const output = await readShard(workerData as ShardInput, (records) => {
    pending += records;
    const now = Date.now();
    if (now - last >= 200) {
      port.postMessage({ progress: pending });
      pending = 0;
      last = now;
    }
  });
  // The latencies' buffer moves to the main thread rather than being copied.
  const transfer = output.summary ? [output.summary.acceptedToSentMs.buffer as ArrayBuffer] : [];
  port.postMessage({ progress: pending, output }, transfer);
} catch (error) {
  port.postMessage({ error: (error as Error).message ?? String(error) });
}
