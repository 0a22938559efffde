// kafkajs's admin gives up at once when a partition has no leader yet (a topic just made) or its leader moved;
// the full run met it in replay. Every read of where partitions start and end goes through topicOffsets and
// topicOffsetsAt, which wait that out.
import { readFileSync } from 'node:fs';
import { KafkaJSProtocolError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { topicOffsets, topicOffsetsAt } from './partition-offsets.js';
import { productionSourcesOutsideKafka } from './test-support/sources.js';

// As kafkajs makes it from the broker's answer (its error table says NOT_LEADER_FOR_PARTITION is retriable).
const notLeader = () =>
  new KafkaJSProtocolError(
    Object.assign(new Error('This server is not the leader for that topic-partition'), {
      type: 'NOT_LEADER_FOR_PARTITION',
      code: 6,
      retriable: true,
    }),
  );

const ends = [{ partition: 0, offset: '5', high: '5', low: '0' }];

describe('where partitions start and end', () => {
  it('is asked again while a partition has no leader, and answered', async () => {
    let calls = 0;
    const admin = {
      fetchTopicOffsets: () => (++calls < 3 ? Promise.reject(notLeader()) : Promise.resolve(ends)),
    };
    await expect(topicOffsets(admin, 't')).resolves.toEqual(ends);
    expect(calls).toBe(3);
    let byTime = 0;
    const timed = {
      fetchTopicOffsetsByTimestamp: () =>
        ++byTime < 2 ? Promise.reject(notLeader()) : Promise.resolve([{ partition: 0, offset: '-1' }]),
    };
    await expect(topicOffsetsAt(timed, 't', 0)).resolves.toEqual([{ partition: 0, offset: '-1' }]);
  });

  it('fails at once on an error that is not transient, and when out of patience', async () => {
    let calls = 0;
    const refused = {
      fetchTopicOffsets: () => {
        calls++;
        return Promise.reject(new Error('Invalid topic'));
      },
    };
    await expect(topicOffsets(refused, 't')).rejects.toThrow('Invalid topic');
    expect(calls).toBe(1);
    const leaderless = { fetchTopicOffsets: () => Promise.reject(notLeader()) };
    await expect(topicOffsets(leaderless, 't', 0)).rejects.toThrow(/not the leader/);
  });

  it('is read through them everywhere outside this package', () => {
    const direct = productionSourcesOutsideKafka().filter((f) =>
      /\.fetchTopicOffsets(ByTimestamp)?\(/.test(readFileSync(f, 'utf8')),
    );
    expect(direct).toEqual([]);
  });
});
