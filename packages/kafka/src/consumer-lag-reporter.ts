import type { Logger } from '@mds/logging';
import type { Admin, Kafka } from 'kafkajs';
import { LagTracker } from './consumer-lag.js';
import type { KafkaMetrics } from './metrics.js';
import { topicOffsets } from './partition-offsets.js';

/** A member with events in hand this long asks the broker where its partitions end (fetches stopped). */
const STUCK_MS = 5_000;
const REFRESH_MS = 5_000;

/**
 * One member's lag: tracked from its fetches, exported as `mds_consumer_lag_records` and
 * `mds_consumer_lag_seconds`, and, while a batch is stuck (no fetch brings news of the log's end), kept
 * true by asking the broker for the high watermarks every few seconds.
 */
export class LagReporter {
  readonly tracker = new LagTracker();
  private timer: NodeJS.Timeout | undefined;
  private admin: Admin | undefined;
  private refreshing: Promise<void> | undefined;
  private unregister: (() => void) | undefined;

  constructor(
    private readonly o: { kafka: Kafka; groupId: string; log: Logger; metrics?: KafkaMetrics | undefined },
  ) {}

  start(): void {
    this.unregister = this.o.metrics?.lagOf(this.o.groupId, () => this.tracker.snapshot());
    this.timer = setInterval(() => {
      if (this.tracker.stuckForMs() >= STUCK_MS) this.refreshing ??= this.refresh();
      else if (!this.refreshing) void this.disconnectAdmin();
    }, REFRESH_MS);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.unregister?.();
    await this.refreshing;
    await this.disconnectAdmin();
  }

  private async refresh(): Promise<void> {
    try {
      if (!this.admin) {
        this.admin = this.o.kafka.admin();
        await this.admin.connect();
      }
      for (const topic of this.tracker.topicsInHand()) {
        // No waiting here: the next refresh asks again, and stopping does not wait on a broker in trouble.
        const ends = await topicOffsets(this.admin, topic, 0);
        this.tracker.highWatermarks(
          topic,
          ends.map((e) => ({ partition: e.partition, offset: e.high })),
        );
      }
    } catch (error) {
      this.o.log.debug({ err: error }, 'could not read where the partitions end');
    } finally {
      this.refreshing = undefined;
    }
  }

  private async disconnectAdmin(): Promise<void> {
    const admin = this.admin;
    this.admin = undefined;
    await admin?.disconnect().catch(() => undefined);
  }
}
