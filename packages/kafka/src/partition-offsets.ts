import { retryUntil } from '@mds/async';
import type { Admin } from 'kafkajs';
import { failureKind } from './failures.js';

/**
 * How long a read of where partitions start and end waits out a transient broker state: a leader not yet
 * elected for a topic just made, a leader moving, a broker restarting. kafkajs's admin retries only an unknown
 * topic and gives up at once on the rest (NOT_LEADER_FOR_PARTITION among them).
 */
const PATIENCE_MS = 30_000;

function patiently<T>(read: () => Promise<T>, patienceMs: number): Promise<T> {
  const began = Date.now();
  return retryUntil(read, {
    initialMs: 100,
    maxMs: 2_000,
    shouldRetry: (error, _attempt, waitMs) =>
      failureKind(error) === 'transient' && Date.now() - began + waitMs <= patienceMs,
  });
}

/** Where each partition of a topic starts (`low`) and ends (`high`) now. */
export function topicOffsets(
  admin: Pick<Admin, 'fetchTopicOffsets'>,
  topic: string,
  patienceMs = PATIENCE_MS,
): ReturnType<Admin['fetchTopicOffsets']> {
  return patiently(() => admin.fetchTopicOffsets(topic), patienceMs);
}

/** Per partition, the offset of the first record at or after `timestamp` (-1: none). */
export function topicOffsetsAt(
  admin: Pick<Admin, 'fetchTopicOffsetsByTimestamp'>,
  topic: string,
  timestamp: number,
  patienceMs = PATIENCE_MS,
): ReturnType<Admin['fetchTopicOffsetsByTimestamp']> {
  return patiently(() => admin.fetchTopicOffsetsByTimestamp(topic, timestamp), patienceMs);
}
