import { createHash } from 'node:crypto';

// A fixed namespace for the ids of events derived from other events (RFC 9562 name-based UUIDs).
const NAMESPACE = Buffer.from('6f0b4b8e3c0d4f5f9a1e2d3c4b5a6978', 'hex');

/**
 * The id of an event caused by another, the same every time it is derived: a consumer that handles its
 * input twice (after a crash before its offset commit) emits the same event id twice, and consumers
 * downstream drop the copy by id.
 */
export function derivedEventId(causationEventId: string, purpose: string): string {
  const hash = createHash('sha1').update(NAMESPACE).update(`${causationEventId}/${purpose}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50; // version 5
  hash[8] = (hash[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
