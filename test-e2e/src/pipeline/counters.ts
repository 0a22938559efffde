// The work a pipeline run asks of each part, read from counters that count exactly: every service's own
// Prometheus counters, from its ops listener (OPS_PORT; the public port no longer serves /metrics), and
// PostgreSQL's statistics of the stack's database. Read before and after a phase; the difference divided by
// the messages delivered meanwhile is the work per message. A counter that is missing fails the reading,
// naming the counter and the URL, so a moved or renamed metric can never read as zero work.

/** The counters a pipeline reading needs, by what they count. */
export const KAFKA_COUNTERS = {
  /** Produce requests the service's publisher made (one per batch it sent). */
  produceRequests: 'mds_event_publish_batch_size_count',
  /** Records those requests carried. */
  recordsProduced: 'mds_event_publish_batch_size_sum',
  /** Calls of a consumer's handler (one per chunk of a fetch). */
  handlerBatches: 'mds_event_handler_seconds_count',
  /** Events handled and committed. */
  eventsConsumed: 'mds_events_consumed_total',
  /** Fetch requests of the service's consumer groups. */
  fetches: 'mds_kafka_fetches_total',
  /** Offset commits of the service's consumer groups. */
  commits: 'mds_kafka_offset_commits_total',
  /** Every request the service's Kafka clients made and Kafka answered, of any kind. */
  kafkaRequests: 'mds_kafka_requests_total',
} as const;
export type KafkaCounter = keyof typeof KAFKA_COUNTERS;

export class MissingCounterError extends Error {
  override readonly name = 'MissingCounterError';
  constructor(counter: string, url: string) {
    super(
      `${url} serves no counter ${counter}: the reading would count nothing (did the metric move or change its name?)`,
    );
  }
}

/** One scrape of a Prometheus text exposition. */
export class Scrape {
  private readonly families = new Set<string>();
  private readonly samples: { name: string; labels: string; value: number }[] = [];

  constructor(
    readonly url: string,
    text: string,
  ) {
    for (const line of text.split('\n')) {
      if (line.startsWith('# TYPE ')) this.families.add(line.split(' ')[2]!);
      if (line === '' || line.startsWith('#')) continue;
      const brace = line.indexOf('{');
      const space = line.lastIndexOf(' ');
      const name = brace >= 0 ? line.slice(0, brace) : line.slice(0, line.indexOf(' '));
      const labels = brace >= 0 ? line.slice(brace, line.lastIndexOf('}') + 1) : '';
      this.samples.push({ name, labels, value: Number(line.slice(space + 1)) });
    }
  }

  static async of(url: string): Promise<Scrape> {
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    if (!response.ok) throw new Error(`${url} answered ${response.status}`);
    return new Scrape(url, await response.text());
  }

  /**
   * The sum of a counter's series whose labels contain `having` (e.g. `status="429"`). Throws when the
   * service does not declare the counter's family at all; a declared one with no series yet is 0.
   */
  sum(name: string, having = ''): number {
    const family = name.replace(/_(count|sum|bucket|total)$/, '');
    if (!this.families.has(name) && !this.families.has(family)) throw new MissingCounterError(name, this.url);
    return this.samples
      .filter((s) => s.name === name && s.labels.includes(having))
      .reduce((sum, s) => sum + s.value, 0);
  }
}

export type KafkaCounts = Record<KafkaCounter, number>;

/** A service's Kafka counters now, from its ops listener. */
export async function kafkaCounts(opsUrl: string): Promise<KafkaCounts> {
  const scrape = await Scrape.of(`${opsUrl}/metrics`);
  return Object.fromEntries(
    Object.entries(KAFKA_COUNTERS).map(([key, name]) => [key, scrape.sum(name)]),
  ) as KafkaCounts;
}

export function difference<K extends string>(
  before: Record<K, number>,
  after: Record<K, number>,
): Record<K, number> {
  return Object.fromEntries(Object.keys(after).map((k) => [k, after[k as K] - before[k as K]])) as Record<
    K,
    number
  >;
}

/**
 * Fails loudly when a counter that must have moved reads zero although messages went through: the bench
 * or the guard would otherwise print or assert 0.00 work per message (as it did when /metrics moved).
 */
export function requireMoved(
  delivered: number,
  moved: { what: string; url: string; counter: string; by: number }[],
) {
  if (delivered === 0) return;
  const still = moved.filter((m) => m.by <= 0);
  if (still.length > 0)
    throw new Error(
      `${delivered} messages were delivered, yet these counters did not move:\n` +
        still.map((m) => `  ${m.what}: ${m.counter} at ${m.url}`).join('\n'),
    );
}
