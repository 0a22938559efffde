import { registryGrpcTls } from '@mds/config';
import { randomUUID } from 'node:crypto';
import { topics, type ClientRequestEvent, type MessageEvent } from '@mds/contracts';
import { createEventConsumer, type EventConsumer } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { dashboardPublicKeys, type ServiceContext } from '@mds/service-kit';
import {
  connectPublisher,
  openFoundation,
  serveService,
  startRetention,
  type ServiceFoundation,
} from '@mds/service-kit/platform';
import { applyEvents, readState } from '@mds/message-state/store';
import { Counter, Gauge, type Registry } from 'prom-client';
import { createAddressLimiter } from './adapters/address-limiter.js';
import { createApiKeyResolver, registryKeyLookup, type ApiKeyResolver } from '@mds/registry-client';
import { createIdempotencyStore } from './adapters/idempotency.js';
import { fingerprinter } from './application/fingerprint.js';
import { createRateLimiter } from './adapters/rate-limiter.js';
import { docsPage } from './api/docs.js';
import { openApiDocument } from './api/openapi.js';
import { apiRouter } from './api/routes.js';
import { dashboardCallers } from './api/dashboard-caller.js';
import type { Config } from './config.js';
import { deployment } from './provision.js';
import { openSealedResult } from './adapters/personal-data.js';
import { forgottenConsumer, cachedRegistryPersonKeys } from '@mds/personal-data';
import { keyFollower } from './api/kafka/key-follower.js';
import { createRequestLogEmitter } from './adapters/request-log-emitter.js';

/**
 * The read model of GET /api/v1/events/{event_id}: every message and request event folded into its
 * state (@mds/message-state), by a consumer group of the gateway's own; replicas share the partitions.
 */
function eventStatesProjection(
  { kafka, metrics, settings, db, deadLetters }: ServiceFoundation,
  logger: Logger,
  maxWaitMs: number,
): EventConsumer {
  return createEventConsumer<MessageEvent | ClientRequestEvent>({
    kafka,
    logger,
    metrics,
    groupId: `${settings.topicPrefix}gateway.event-states`,
    topicPrefix: settings.topicPrefix,
    topics: [topics.message, topics.clientRequest] as never,
    // Not on anyone's path to a webhook: events gather for a moment, and a message's acceptance and outcome
    // are often folded by one transaction.
    minFetchIntervalMs: maxWaitMs,
    // A large fetch is folded in slices, so requests are served between them rather than after all of it.
    maxBatchSize: 250,
    deadLetters,
    // The read model keeps numbers sealed as they came (a forgotten person's then read as erased); the read
    // API opens them.
    handleBatch: async (events) => {
      await applyEvents(
        db,
        events.map((e) => e.record),
        events.map((e) => `${e.topic}/${e.partition}`),
      );
    },
  });
}

/**
 * The ids of every company's keys (ListApiKeyIds), loaded now and every `refreshMs`: a key with one of them is
 * never charged to its client address's limit on guessing, even on a replica that has not seen it yet. Until
 * the first load succeeds only keys seen good here are known (a failed load is logged and retried).
 */
function startKeyDirectory(
  apiKeys: ApiKeyResolver,
  refreshMs: number,
  { logger, lifecycle }: ServiceContext,
  registry: Registry,
): void {
  new Gauge({
    name: 'mds_gateway_api_key_ids_known',
    help: "API key ids the gateway knows to be companies' (listed by client-registry, or seen good)",
    registers: [registry],
    collect() {
      this.set(apiKeys.knownIds);
    },
  });
  let loading = false;
  const load = () => {
    if (loading) return;
    loading = true;
    apiKeys
      .loadDirectory()
      .catch((error: unknown) => logger.warn({ err: error }, 'could not load the API key ids; retrying'))
      .finally(() => {
        loading = false;
      });
  };
  load();
  const timer = setInterval(load, refreshMs);
  timer.unref();
  lifecycle.onStop('API key directory', () => clearInterval(timer));
}

/** Builds and starts the gateway; what it starts is registered with the lifecycle, stopped in reverse. */
export async function startGateway(
  config: Config,
  context: ServiceContext,
): Promise<{ port: number; opsPort?: number }> {
  const { logger, lifecycle } = context;
  const foundation = await openFoundation(deployment, config, context);
  const { registry, metrics, settings, kafka, db, deadLetters } = foundation;
  const publisher = await connectPublisher(foundation, context, { timeoutMs: config.PUBLISH_TIMEOUT_MS });
  const keyLookups = new Counter({
    name: 'mds_gateway_api_key_lookups_total',
    help: "API keys asked of client-registry (not answered from the gateway's memory), by answer",
    labelNames: ['answer'],
    registers: [registry],
  });
  const registryKeys = registryKeyLookup({
    address: config.REGISTRY_GRPC_ADDRESS,
    token: config.INTERNAL_GRPC_TOKEN,
    tls: registryGrpcTls(config),
  });
  const apiKeys = createApiKeyResolver({
    ask: async (apiKey) => {
      try {
        const resolution = await registryKeys.ask(apiKey);
        keyLookups.inc({ answer: resolution.ok ? 'ok' : resolution.reason });
        return resolution;
      } catch (error) {
        keyLookups.inc({ answer: 'error' });
        throw error;
      }
    },
    listKeyIds: registryKeys.listKeyIds,
    close: registryKeys.close,
    ttlMs: config.API_KEY_CACHE_TTL_MS,
    negativeTtlMs: config.API_KEY_NEGATIVE_CACHE_TTL_MS,
    maxConcurrentLookups: config.API_KEY_MAX_CONCURRENT_LOOKUPS,
  });
  const addresses = createAddressLimiter({
    ratePerSecond: config.AUTH_FAILURES_PER_ADDRESS_PER_SECOND,
    burst: config.AUTH_FAILURE_BURST,
    maxAddresses: config.AUTH_FAILURE_MAX_ADDRESSES,
  });
  lifecycle.onStop('registry client', () => apiKeys.close());
  startKeyDirectory(apiKeys, config.API_KEY_DIRECTORY_REFRESH_MS, context, registry);
  const keyEnds = keyFollower({
    kafka,
    logger,
    metrics,
    registry,
    topicPrefix: settings.topicPrefix,
    apiKeys,
  });
  const requestLog = createRequestLogEmitter({
    publisher,
    logger,
    registry,
    newId: randomUUID,
    maxBuffered: config.REQUEST_LOG_MAX_BUFFERED,
    maxBatch: 500,
    flushIntervalMs: config.REQUEST_LOG_FLUSH_MS,
    publishTimeoutMs: config.PUBLISH_TIMEOUT_MS,
  });
  // After HTTP has closed (stopped in reverse), before the producer: the last requests' records go out.
  lifecycle.onStop('request log', () => requestLog.stop());
  // Person keys (client-registry's ObtainPersonKey / GetPersonKey) behind a bounded cache: sealing a send to
  // someone seen within the TTL costs a map lookup and one AES-GCM encryption.
  const personKeys = cachedRegistryPersonKeys(config, lifecycle);
  const idempotency = createIdempotencyStore({ db, ttlHours: config.IDEMPOTENCY_TTL_HOURS });
  const sweeper = setInterval(() => {
    idempotency
      .removeExpired()
      .catch((error: unknown) => logger.warn({ err: error }, 'could not remove expired idempotency keys'));
  }, 60_000);
  lifecycle.onStop('idempotency sweeper', () => clearInterval(sweeper));

  const projection = eventStatesProjection(foundation, logger, config.PROJECTION_MAX_WAIT_MS);
  const forgetting = forgottenConsumer({
    kafka,
    logger,
    metrics,
    topicPrefix: settings.topicPrefix,
    group: 'gateway.forget',
    keyCache: personKeys,
    deadLetters,
  });
  startRetention(foundation, context, config, {
    rules: [{ table: 'event_states', column: 'updated_at', days: config.RETENTION_EVENT_STATES_DAYS }],
  });

  return serveService(context, foundation, {
    config,
    readiness: [
      // The read model's consumer is left out on purpose: a lagging or restarting read model must not
      // take the gateway out of service for sends; its failures show in the handler metrics and logs.
      { name: 'kafka', check: () => publisher.healthy() },
    ],
    separateOps: true,
    routes: (app) => {
      if (config.TRUST_PROXY !== undefined) app.set('trust proxy', config.TRUST_PROXY);
      const document = openApiDocument();
      app.get('/api/v1/openapi.json', (_req, res) => {
        res.json(document);
      });
      const docs = docsPage();
      app.get('/api/v1/docs', (_req, res) => {
        res.type('html').send(docs);
      });
      app.use(
        '/api/v1',
        apiRouter({
          logger,
          registry,
          publisher,
          apiKeys,
          dashboard: dashboardCallers(dashboardPublicKeys(config.DASHBOARD_PUBLIC_KEYS ?? '')),
          addresses,
          personKeys,
          limiter: createRateLimiter({ db }),
          idempotency,
          states: {
            read: async (eventId, companyId) =>
              openSealedResult(personKeys, await readState(db, eventId, companyId)),
          },
          limits: {
            sendPerKey: config.RATE_LIMIT_SEND_PER_KEY,
            sendPerCompany: config.RATE_LIMIT_SEND_PER_COMPANY,
            otherPerKey: config.RATE_LIMIT_OTHER_PER_KEY,
            otherPerCompany: config.RATE_LIMIT_OTHER_PER_COMPANY,
            readPerKey: config.RATE_LIMIT_READ_PER_KEY,
            readPerCompany: config.RATE_LIMIT_READ_PER_COMPANY,
            burstSeconds: config.RATE_LIMIT_BURST_SECONDS,
          },
          publishTimeoutMs: config.PUBLISH_TIMEOUT_MS,
          fingerprint: fingerprinter(config.IDEMPOTENCY_FINGERPRINT_KEYS.split(',').map((k) => k.trim())),
          maxBodyBytes: config.MAX_BODY_BYTES,
          maxBatchBodyBytes: config.MAX_BATCH_BODY_BYTES,
          recordServed: (request) => requestLog.record(request),
          now: () => new Date(),
          newId: randomUUID,
        }),
      );
    },
    startLast: [
      // First: a key revoked is refused at once from the moment the gateway is ready.
      { name: 'API key follower', start: () => keyEnds.start(), stop: () => keyEnds.stop() },
      { name: 'event-states consumer', start: () => projection.start(), stop: () => projection.stop() },
      { name: 'forget consumer', start: () => forgetting.start(), stop: () => forgetting.stop() },
    ],
  });
}
