import { registryGrpcTls } from '@mds/config';
import { randomUUID } from 'node:crypto';
import { deliveryTopic, type DeliveryEvent, type MessengerDefinition } from '@mds/contracts';
import { cachedRegistryPersonKeys, type PersonKeyPort } from '@mds/personal-data';
import { createEventConsumer, partitionCountOf, partitionOfKey, topicName } from '@mds/kafka';
import { errorSummary } from '@mds/logging';
import { type ServiceContext } from '@mds/service-kit';
import { connectPublisher, openFoundation, serveService, startRetention } from '@mds/service-kit/platform';
import { Gauge } from 'prom-client';
import type { SenderConfig } from './config.js';
import { claimLifeMs, createDeliveries } from './application/deliveries.js';
import { registryDirectory } from '@mds/registry-client';
import type { BotDirectory, SenderParts } from './application/ports.js';
import { senderDeployment } from './deployment.js';
import { createJournal, journalRetentionRule } from './adapters/journal/journal.js';
import { senderMetrics } from './adapters/metrics.js';
import type { MessengerProvider } from '@mds/messengers';
import { createUpdateIngestion } from './application/updates.js';
import { updatesRouter } from './api/updates.js';
import { partitionOfBot } from './domain/ownership.js';

export interface SenderOptions {
  /** The messenger of this deployment, as the catalogue defines it (its topic, its deployment's names). */
  definition: MessengerDefinition;
  provider: MessengerProvider;
  /** The database schema of this sender (each sender keeps its own journal); by default the catalogue's. */
  schema?: string;
  /** Tests may give another directory; by default client-registry over gRPC. */
  directory?: BotDirectory;
  /** Tests may give other person keys; by default client-registry over gRPC, cached. */
  personKeys?: PersonKeyPort;
}

/** Deliveries arriving this close together are claimed by one statement (the latency it may add). */
const FETCH_INTERVAL_MS = 5;

/** How long storing a call's result is retried before the claim is given up (see claimLifeMs). */
const JOURNAL_RETRY_MS = 60_000;

/**
 * A claim older than this (by the database's clock) was abandoned: its calls and the retries of storing
 * their result are over, with a margin for clocks that disagree.
 */
function abandonAfterSeconds(config: SenderConfig): number {
  const lifeMs = claimLifeMs({ sendTimeoutMs: config.SEND_TIMEOUT_MS, journalRetryMs: JOURNAL_RETRY_MS });
  return Math.ceil((lifeMs + 30_000) / 1000);
}

/** Builds and starts one sender; everything started is registered with the lifecycle to stop in reverse. */
export async function startSender(
  config: SenderConfig,
  context: ServiceContext,
  o: SenderOptions,
): Promise<{ httpPort: number }> {
  const { logger, lifecycle } = context;
  const name = o.definition.sender;
  const routedDeliveries = deliveryTopic(o.definition.name);
  const foundation = await openFoundation(senderDeployment(o.definition, o.schema), config, context);
  const { registry, metrics: kMetrics, settings, kafka, db } = foundation;
  const metrics = senderMetrics(registry);
  const deliveryTopicName = topicName(routedDeliveries, settings.topicPrefix);
  const partitionCount = await partitionCountOf(kafka, deliveryTopicName);

  const directory =
    o.directory ??
    registryDirectory({
      address: config.REGISTRY_GRPC_ADDRESS,
      token: config.INTERNAL_GRPC_TOKEN,
      tls: registryGrpcTls(config),
      messenger: o.provider.messenger,
    });
  lifecycle.onStop('registry client', () => directory.close());
  const personKeys = o.personKeys ?? cachedRegistryPersonKeys(config, lifecycle);
  if (o.provider.close) lifecycle.onStop('provider', () => o.provider.close!());

  const publisher = await connectPublisher(foundation, context);

  const journal = createJournal(db, `${name}/${randomUUID()}`, abandonAfterSeconds(config));
  const parts: SenderParts = {
    provider: o.provider,
    journal,
    directory,
    personKeys,
    publisher,
    logger,
    metrics,
  };
  const deliveries = createDeliveries({
    ...parts,
    deliveryTopic: routedDeliveries,
    botRatePerSecond: config.BOT_RATE_PER_SECOND,
    chatRatePerSecond: config.CHAT_RATE_PER_SECOND,
    botConcurrency: config.BOT_CONCURRENCY,
    sendTimeoutMs: config.SEND_TIMEOUT_MS,
    retry: { baseMs: config.RETRY_BASE_MS, maxMs: config.RETRY_MAX_MS },
    windowPerBot: config.QUEUE_WINDOW_PER_BOT,
    unconfirmed: config.UNCONFIRMED_SENDS,
    journalRetryMs: JOURNAL_RETRY_MS,
    setAside: async (refused) => {
      await foundation.deadLetters.setAside([
        {
          group: `${settings.topicPrefix ?? ''}${name}`,
          topic: deliveryTopicName,
          partition: refused.partition,
          // -1: read from the journal, its offset not known here.
          offset: refused.offset ?? '-1',
          key: refused.botId,
          payload: refused.request,
          reason: `refused: ${errorSummary(refused.error)}`,
        },
      ]);
      kMetrics.setAside.inc({ topic: deliveryTopicName, group: `${settings.topicPrefix ?? ''}${name}` });
    },
  });
  new Gauge({
    name: 'mds_sender_chat_schedules',
    help: 'Per-chat rate schedules held in memory (chats sent to within the last slot of their rate)',
    registers: [registry],
    collect() {
      this.set(deliveries.chatSchedules());
    },
  });

  const partitionOf = partitionOfBot(partitionOfKey, partitionCount);
  const updates = createUpdateIngestion({
    ...parts,
    mode: config.UPDATES_MODE,
    partitionOf,
    takeSlot: (botId, partition, signal) => deliveries.takeSlot(botId, partition, signal),
    refreshMs: config.BOTS_REFRESH_MS,
    publicUrl: config.UPDATES_PUBLIC_URL,
    webhookSecret: config.UPDATES_WEBHOOK_SECRET,
  });
  lifecycle.onStop('update ingestion', () => updates.stop());

  // Finished deliveries older than JOURNAL_RETENTION_DAYS (a parked one once its outcome is published), in
  // bounded batches through the deliveries_finished index. The rows hold the requests sealed, as they came.
  startRetention(foundation, context, config, {
    name: 'journal retention',
    rules: [journalRetentionRule(config.JOURNAL_RETENTION_DAYS)],
  });

  const consumer = createEventConsumer<DeliveryEvent>({
    kafka,
    logger,
    metrics: kMetrics,
    groupId: `${settings.topicPrefix}${name}`,
    topicPrefix: settings.topicPrefix,
    topics: [routedDeliveries],
    minFetchIntervalMs: FETCH_INTERVAL_MS,
    deadLetters: foundation.deadLetters,
    handleBatch: (events, context) => deliveries.store(events, context),
    onAssignment: (assignment) => {
      const partitions = assignment.get(deliveryTopicName) ?? [];
      deliveries.assign(partitions);
      updates.assign(partitions);
    },
  });

  const http = await serveService(context, foundation, {
    config,
    readiness: [{ name: 'kafka', check: () => publisher.healthy() && consumer.healthy() }],
    routes: (app) => app.use(updatesRouter(updates)),
    startLast: [
      {
        // The calls in flight are decided and published first; the consumer then commits what they let go of
        // (messages queued but not started come again from the log).
        name: 'deliveries in flight, then the kafka consumer',
        start: () => consumer.start(),
        stop: async () => {
          await deliveries.stop();
          await consumer.stop();
        },
      },
      // Its stop is registered above, before the journal's retention.
      { name: 'update ingestion', start: () => updates.start() },
    ],
  });
  return { httpPort: http.port };
}
