import { registryGrpcTls } from '@mds/config';
import { topics, type ClientRequestEvent, type MessageEvent } from '@mds/contracts';
import { databaseAnswers, migrateUp, openDatabase, setAsideIn } from '@mds/db';
import {
  createEventConsumer,
  createEventPublisher,
  createKafkaClient,
  kafkaMetrics,
  kafkaSettingsFromEnv,
  provisionTopics,
} from '@mds/kafka';
import {
  createHttpApp,
  createMetricsRegistry,
  notFoundHandler,
  type OpsOptions,
  problemHandler,
  serveHttp,
  type ServiceContext,
} from '@mds/service-kit';
import { createDispatcher } from './application/dispatcher.js';
import { sendTestEvent } from './application/test-event.js';
import { notificationsHandler } from './api/kafka/notifications.js';
import { createDeliveryStore } from './adapters/db/store.js';
import { migrations, SCHEMA } from './adapters/db/migrations.js';
import { createOutboxRelay } from '@mds/outbox';
import { createRetention, forgottenConsumer, cachedRegistryPersonKeys } from '@mds/personal-data';
import { forgetInDeliveries, retentionRules } from './adapters/db/personal-data.js';
import { createWebhookSender } from './adapters/http-sender.js';
import { adminRouter } from './api/http/admin.js';
import { createEndpointDirectory } from './adapters/registry.js';
import { addressPolicy } from './adapters/ssrf.js';
import type { Config } from './config.js';
import { TOPICS } from './provision.js';

export { configSchema, type Config } from './config.js';

export { TOPICS };

/** Outcomes arriving this close together are stored by one statement (the latency it may add). */
const FETCH_INTERVAL_MS = 5;

export interface DispatcherOverrides {
  /** The schedule's clock (tests move it forward). */
  now?: () => Date;
  /** Jitter's randomness, in [0, 1). */
  random?: () => number;
}

/** Builds and starts the dispatcher; everything started is registered with the lifecycle to stop in reverse. */
export async function startDispatcher(
  config: Config,
  { logger, lifecycle }: ServiceContext,
  overrides: DispatcherOverrides = {},
): Promise<{ httpPort: number }> {
  const now = overrides.now ?? (() => new Date());
  const registry = createMetricsRegistry('webhook-dispatcher');
  const metrics = kafkaMetrics(registry);
  const settings = kafkaSettingsFromEnv(config, 'webhook-dispatcher');
  const kafka = createKafkaClient(settings, logger);
  let started = false;

  const db = await openDatabase({
    url: config.DATABASE_URL,
    schema: SCHEMA,
    poolMax: config.DATABASE_POOL_MAX,
    applicationName: 'webhook-dispatcher',
  });
  lifecycle.onStop('database', () => db.destroy());
  await migrateUp(db, SCHEMA, migrations);
  await provisionTopics(kafka, TOPICS, {
    prefix: settings.topicPrefix,
    replicationFactor: settings.replicationFactor,
    historyRetentionDays: settings.historyRetentionDays,
    logger,
  });

  const publisher = createEventPublisher({ kafka, logger, topicPrefix: settings.topicPrefix, metrics });
  await publisher.connect();
  lifecycle.onStop('kafka producer', () => publisher.disconnect());
  // Results publish their events themselves now; the relay only sends what an older version left behind.
  const relay = createOutboxRelay({
    name: 'webhook-dispatcher',
    db,
    databaseUrl: config.DATABASE_URL,
    publisher,
    logger,
    pollMs: 10_000,
    registry,
  });
  await relay.start();
  lifecycle.onStop('outbox relay', () => relay.stop());

  const directory = createEndpointDirectory({
    address: config.REGISTRY_GRPC_ADDRESS,
    token: config.INTERNAL_GRPC_TOKEN,
    tls: registryGrpcTls(config),
    ttlMs: config.WEBHOOK_ENDPOINT_CACHE_TTL_MS,
  });
  lifecycle.onStop('registry client', () => directory.close());
  // Opens the numbers of client checks for their webhook bodies.
  const personKeys = cachedRegistryPersonKeys(config, lifecycle);
  const sender = createWebhookSender({
    policy: addressPolicy(config.WEBHOOK_SSRF_ALLOWLIST, config.WEBHOOK_ALLOWED_PORTS),
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    excerptBytes: config.WEBHOOK_RESPONSE_EXCERPT_BYTES,
    // Companies may share an origin: the pool must never be what bounds one company by another's load.
    connectionsPerOrigin: config.WEBHOOK_MAX_IN_FLIGHT,
  });
  lifecycle.onStop('http sender', () => sender.close());

  const store = createDeliveryStore(db);
  const dispatcher = createDispatcher({
    store,
    directory,
    sender,
    publisher,
    logger,
    registry,
    now,
    random: overrides.random ?? Math.random,
    policy: {
      delaysSeconds: config.WEBHOOK_RETRY_SCHEDULE_SECONDS,
      jitter: config.WEBHOOK_RETRY_JITTER,
      overloadPenaltySeconds: Math.min(60, Math.max(...config.WEBHOOK_RETRY_SCHEDULE_SECONDS, 0)),
      maxRetryAfterSeconds: Math.max(...config.WEBHOOK_RETRY_SCHEDULE_SECONDS, 0),
    },
    maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
    maxInFlightPerEndpoint: config.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT,
    leaseSeconds: config.WEBHOOK_LEASE_SECONDS,
    pollMs: config.WEBHOOK_POLL_INTERVAL_MS,
    disableAfterMs: config.WEBHOOK_DISABLE_AFTER_HOURS * 3_600_000,
  });
  dispatcher.start();
  lifecycle.onStop('delivery workers', () => dispatcher.stop());

  const consumer = createEventConsumer<MessageEvent | ClientRequestEvent>({
    kafka,
    logger,
    metrics,
    groupId: `${settings.topicPrefix}webhook-dispatcher`,
    topicPrefix: settings.topicPrefix,
    topics: [topics.message, topics.clientRequest] as never,
    minFetchIntervalMs: FETCH_INTERVAL_MS,
    onUndecodable: setAsideIn(db, 'consumer:webhook-dispatcher'),
    handleBatch: notificationsHandler({
      db,
      personKeys,
      now,
      accept: (deliveries) => dispatcher.accept(deliveries),
    }),
  });
  const forgetting = forgottenConsumer({
    kafka,
    logger,
    metrics,
    topicPrefix: settings.topicPrefix,
    group: 'webhook-dispatcher.forget',
    keyCache: personKeys,
    purge: (companyId, subjectId) => forgetInDeliveries(db, companyId, subjectId),
    onUndecodable: setAsideIn(db, 'consumer:webhook-dispatcher.forget'),
  });
  const stopRetention = createRetention({
    db,
    logger,
    registry,
    batchSize: config.RETENTION_BATCH_SIZE,
    rules: retentionRules(config.RETENTION_DELIVERIES_DAYS),
  }).start(config.RETENTION_INTERVAL_MINUTES * 60_000);
  lifecycle.onStop('retention', () => stopRetention());

  const ops: OpsOptions = {
    logger,
    registry,
    isReady: () => started && !lifecycle.isStopping,
    readiness: [
      { name: 'database', check: () => databaseAnswers(db) },
      { name: 'kafka', check: () => publisher.healthy() && consumer.healthy() },
      { name: 'outbox', check: () => relay.healthy() },
      { name: 'workers', check: () => dispatcher.healthy() },
    ],
  };
  const app = createHttpApp({ ...ops, separateOps: config.OPS_PORT !== undefined });
  // Test events read the endpoint afresh: a URL or secret changed a moment ago is what a person tests.
  const freshDirectory = createEndpointDirectory({
    address: config.REGISTRY_GRPC_ADDRESS,
    token: config.INTERNAL_GRPC_TOKEN,
    tls: registryGrpcTls(config),
    ttlMs: 0,
  });
  lifecycle.onStop('registry client (test events)', () => freshDirectory.close());
  app.use(
    '/admin/v1',
    adminRouter({
      store,
      adminToken: config.DISPATCHER_ADMIN_TOKEN,
      now,
      poke: () => dispatcher.poke(),
      sendTest: (companyId) => sendTestEvent({ directory: freshDirectory, sender }, companyId),
    }),
  );
  app.use(notFoundHandler());
  app.use(problemHandler(logger));
  const http = await serveHttp(app, ops, config, lifecycle);

  await consumer.start();
  lifecycle.onStop('kafka consumer', () => consumer.stop());
  await forgetting.start();
  lifecycle.onStop('forget consumer', () => forgetting.stop());
  started = true;
  return { httpPort: http.port };
}
