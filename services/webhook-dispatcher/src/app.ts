import { registryGrpcTls } from '@mds/config';
import { topics, type ClientRequestEvent, type MessageEvent } from '@mds/contracts';
import { createEventConsumer, type EventConsumer } from '@mds/kafka';
import { Counter } from 'prom-client';
import type { Logger } from '@mds/logging';
import { dashboardPublicKeys, type ServiceContext } from '@mds/service-kit';
import {
  connectPublisher,
  openFoundation,
  serveService,
  startOutboxRelay,
  startRetention,
  type ServiceFoundation,
} from '@mds/service-kit/platform';
import { createDispatcher, type Dispatcher, type DispatcherOptions } from './application/dispatcher.js';
import { createEndpointView, type EndpointView } from './application/endpoint-view.js';
import { sendTestEvent } from './application/test-event.js';
import { accountFollower } from './api/kafka/account-follower.js';
import { notificationsHandler } from './api/kafka/notifications.js';
import { createDeliveryStore, type PgDeliveryStore } from './adapters/db/store.js';
import {
  forgottenConsumer,
  cachedRegistryPersonKeys,
  type PersonKeyCache,
  type PersonKeyPort,
} from '@mds/personal-data';
import { forgetInDeliveries, retentionRules } from './adapters/db/personal-data.js';
import { createWebhookSender, type WebhookSender } from './adapters/http-sender.js';
import { adminRouter } from './api/http/admin.js';
import { registryEndpoints, type RegistryEndpoints } from './adapters/registry.js';
import { addressPolicy } from './adapters/ssrf.js';
import type { Config } from './config.js';
import type { RetryPolicy } from './domain/schedule.js';
import { deployment, TOPICS } from './provision.js';

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

/** Stores a webhook delivery for every message and request event a company is notified of, with its numbers opened. */
function notificationsConsumer(
  { kafka, metrics, settings, db, deadLetters }: ServiceFoundation,
  logger: Logger,
  o: { personKeys: PersonKeyPort; dispatcher: Dispatcher; view: EndpointView; now: () => Date },
): EventConsumer {
  return createEventConsumer<MessageEvent | ClientRequestEvent>({
    kafka,
    logger,
    metrics,
    groupId: `${settings.topicPrefix}webhook-dispatcher`,
    topicPrefix: settings.topicPrefix,
    topics: [topics.message, topics.clientRequest] as never,
    // Offsets move only once the deliveries are stored: a crash before means the events come again, and
    // the unique source event id drops what was already stored.
    minFetchIntervalMs: FETCH_INTERVAL_MS,
    deadLetters,
    handleBatch: notificationsHandler({
      db,
      personKeys: o.personKeys,
      directory: o.view,
      now: o.now,
      accept: (deliveries) => o.dispatcher.accept(deliveries),
    }),
  });
}

/** The retry schedule as configured; penalties and Retry-After are bounded by its longest step. */
function retryPolicy(config: Config): RetryPolicy {
  const longest = Math.max(...config.WEBHOOK_RETRY_SCHEDULE_SECONDS, 0);
  return {
    delaysSeconds: config.WEBHOOK_RETRY_SCHEDULE_SECONDS,
    jitter: config.WEBHOOK_RETRY_JITTER,
    overloadPenaltySeconds: Math.min(60, longest),
    maxRetryAfterSeconds: longest,
  };
}

/** client-registry's endpoints over gRPC, and the view of them kept in memory by the account log. */
function endpointsOf(config: Config, context: ServiceContext, foundation: ServiceFoundation) {
  const { registry, kafka, metrics, settings } = foundation;
  const endpoints = registryEndpoints({
    address: config.REGISTRY_GRPC_ADDRESS,
    token: config.INTERNAL_GRPC_TOKEN,
    tls: registryGrpcTls(config),
  });
  context.lifecycle.onStop('registry client', () => endpoints.close());
  const reads = new Counter({
    name: 'mds_webhook_endpoint_reads_total',
    help: "Companies' endpoint lists read from client-registry (none per notification: once per company, then after each change of it)",
    registers: [registry],
  });
  const view = createEndpointView({
    load: endpoints.load,
    disable: endpoints.disable,
    provisionalMs: config.WEBHOOK_ENDPOINT_CACHE_TTL_MS,
    onLoad: () => reads.inc(),
  });
  const logger = context.logger;
  const follower = accountFollower({ kafka, logger, metrics, topicPrefix: settings.topicPrefix, view });
  return { endpoints, view, follower };
}

function senderOf(config: Config, context: ServiceContext): WebhookSender {
  const sender = createWebhookSender({
    policy: addressPolicy(config.WEBHOOK_SSRF_ALLOWLIST, config.WEBHOOK_ALLOWED_PORTS),
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    excerptBytes: config.WEBHOOK_RESPONSE_EXCERPT_BYTES,
    // Companies may share an origin: the pool must never be what bounds one company by another's load.
    connectionsPerOrigin: config.WEBHOOK_MAX_IN_FLIGHT,
  });
  context.lifecycle.onStop('http sender', () => sender.close());
  return sender;
}

/** The delivery workers, started; stopped with the lifecycle. */
function workersOf(
  config: Config,
  context: ServiceContext,
  o: Pick<DispatcherOptions, 'store' | 'directory' | 'sender' | 'publisher' | 'registry' | 'now' | 'random'>,
): Dispatcher {
  const dispatcher = createDispatcher({
    ...o,
    logger: context.logger,
    policy: retryPolicy(config),
    maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
    maxInFlightPerEndpoint: config.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT,
    leaseSeconds: config.WEBHOOK_LEASE_SECONDS,
    pollMs: config.WEBHOOK_POLL_INTERVAL_MS,
    disableAfterMs: Math.round(config.WEBHOOK_DISABLE_AFTER_HOURS * 3_600_000),
  });
  dispatcher.start();
  context.lifecycle.onStop('delivery workers', () => dispatcher.stop());
  return dispatcher;
}

/** The admin API: attempt logs, resend, recover, test events. */
function adminRoutes(
  config: Config,
  o: {
    store: PgDeliveryStore;
    dispatcher: Dispatcher;
    view: EndpointView;
    endpoints: RegistryEndpoints;
    sender: WebhookSender;
    now: () => Date;
  },
) {
  return adminRouter({
    store: o.store,
    adminToken: config.DISPATCHER_ADMIN_TOKEN,
    dashboardKeys: dashboardPublicKeys(config.DASHBOARD_PUBLIC_KEYS ?? ''),
    now: o.now,
    poke: () => o.dispatcher.poke(),
    endpoints: (companyId) => o.view.endpoints(companyId),
    freshEndpoints: o.endpoints.load,
    // Test events read the endpoints afresh: a URL or secret changed a moment ago is what a person tests.
    sendTest: (companyId, endpointId) =>
      sendTestEvent({ load: o.endpoints.load, sender: o.sender }, companyId, endpointId),
  });
}

/** Forgets a person's numbers in the deliveries when the registry says so. */
function forgetConsumer(foundation: ServiceFoundation, logger: Logger, personKeys: PersonKeyCache) {
  const { kafka, metrics, settings, db } = foundation;
  return forgottenConsumer({
    kafka,
    logger,
    metrics,
    topicPrefix: settings.topicPrefix,
    group: 'webhook-dispatcher.forget',
    keyCache: personKeys,
    purge: (companyId, subjectId) => forgetInDeliveries(db, companyId, subjectId),
    deadLetters: foundation.deadLetters,
  });
}

/** Builds and starts the dispatcher; everything started is registered with the lifecycle to stop in reverse. */
export async function startDispatcher(
  config: Config,
  context: ServiceContext,
  overrides: DispatcherOverrides = {},
): Promise<{ httpPort: number }> {
  const { logger, lifecycle } = context;
  const now = overrides.now ?? (() => new Date());
  const foundation = await openFoundation(deployment, config, context);
  const { registry, db } = foundation;
  const publisher = await connectPublisher(foundation, context);
  // Results publish their events themselves now; the relay only sends what an older version left behind.
  const relay = await startOutboxRelay(foundation, context, {
    publisher,
    databaseUrl: config.DATABASE_URL,
    pollMs: 10_000,
  });
  const { endpoints, view, follower } = endpointsOf(config, context, foundation);
  // Opens the numbers of client checks for their webhook bodies.
  const personKeys = cachedRegistryPersonKeys(config, lifecycle);
  const sender = senderOf(config, context);
  const store = createDeliveryStore(db);
  const random = overrides.random ?? Math.random;
  const dispatcher = workersOf(config, context, {
    store,
    directory: view,
    sender,
    publisher,
    registry,
    now,
    random,
  });
  const consumer = notificationsConsumer(foundation, logger, { personKeys, dispatcher, view, now });
  const forgetting = forgetConsumer(foundation, logger, personKeys);
  startRetention(foundation, context, config, { rules: retentionRules(config.RETENTION_DELIVERIES_DAYS) });
  const http = await serveService(context, foundation, {
    config,
    readiness: [
      { name: 'kafka', check: () => publisher.healthy() && consumer.healthy() && follower.healthy() },
      { name: 'outbox', check: () => relay.healthy() },
      { name: 'workers', check: () => dispatcher.healthy() },
    ],
    routes: (app) =>
      app.use('/admin/v1', adminRoutes(config, { store, dispatcher, view, endpoints, sender, now })),
    startLast: [
      // The view follows the account log before notifications are fanned out from it.
      { name: 'account follower', start: () => follower.start(), stop: () => follower.stop() },
      { name: 'kafka consumer', start: () => consumer.start(), stop: () => consumer.stop() },
      { name: 'forget consumer', start: () => forgetting.start(), stop: () => forgetting.stop() },
    ],
  });
  return { httpPort: http.port };
}
