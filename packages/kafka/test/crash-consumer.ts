// A consumer process that handles events one at a time and hangs, uncommitted, on the event named by
// BLOCK_ON, so the test can kill it with SIGKILL at exactly that point. It commits often and says
// "blocking" only once what it handled before is surely committed.
import { topics } from '@mds/contracts';
import { createEventConsumer, NO_DEAD_LETTER_TABLE } from '../src/index.js';
import { logger, testKafka } from './support.js';

const GROUP_ID = process.env.GROUP_ID ?? '';
const TOPIC_PREFIX = process.env.TOPIC_PREFIX ?? '';
const BLOCK_ON = process.env.BLOCK_ON ?? '';
const consumer = createEventConsumer({
  kafka: testKafka('crash-consumer'),
  logger,
  groupId: GROUP_ID,
  topics: [topics.message],
  topicPrefix: TOPIC_PREFIX,
  deadLetters: NO_DEAD_LETTER_TABLE,
  maxBatchSize: 1,
  // The test waits for this member to be declared dead after its kill: keep that short.
  sessionTimeoutMs: 6_000,
  commitIntervalMs: 50,
  handleBatch: async (events) => {
    for (const e of events) {
      console.log(`handled ${e.record.metadata.eventId}`);
      if (e.record.metadata.eventId === BLOCK_ON) {
        await new Promise((r) => setTimeout(r, 500));
        console.log('blocking');
        await new Promise(() => undefined);
      }
    }
  },
});
await consumer.start();
