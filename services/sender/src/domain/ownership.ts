/** The producers' partitioner (murmur2, as Java clients): which of `partitionCount` partitions a key goes to. */
export type KeyPartitioner = (key: string, partitionCount: number) => number;

/**
 * Which delivery partition a bot belongs to. Routed deliveries are keyed by the bot's id, so the replica that
 * owns that partition owns the bot: it sends the bot's messages, keeps its rate, and reads its updates (one
 * reader per bot, which the messengers require of long polling). The partitioner arrives from outside.
 */
export function partitionOfBot(
  partitionOfKey: KeyPartitioner,
  partitionCount: number,
): (botId: string) => number {
  return (botId) => partitionOfKey(botId, partitionCount);
}
