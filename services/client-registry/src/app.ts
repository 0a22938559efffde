import {
  registryV1,
  topics,
  type BotUpdateEvent,
  type ClientRequestEvent,
  type Complete,
  type MessageEvent,
} from '@mds/contracts';
import { createGrpcServer } from '@mds/grpc';
import { createEventConsumer } from '@mds/kafka';
import { dashboardPublicKeys, type ServiceContext } from '@mds/service-kit';
import {
  connectPublisher,
  openFoundation,
  serveService,
  startOutboxRelay,
  startRetention,
} from '@mds/service-kit/platform';
import { createAccounts } from './application/accounts.js';
import { createLinks } from './application/links.js';
import { createRouting } from './application/routing.js';
import { createRoutingView, type RoutingState } from './application/routing-view.js';
import { isBotUpdate, routingViewFollower } from './api/kafka/consumers.js';
import { accountStore, loadAccounts } from './adapters/db/accounts-store.js';
import { messengerTokenChecker } from './adapters/messengers.js';
import { registryAuthorizer } from './api/grpc/callers.js';
import { linkStore, linksOfPhones } from './adapters/db/links-store.js';
import { REGISTRY_SERVICE, registryService } from './api/grpc/registry-service.js';
import { adminRouter } from './api/http/admin.js';
import { parseKeyring } from './application/secrets.js';
import { databasePersonKeys, destroyPersonKeys, resealPersonKeys } from './adapters/db/person-keys-store.js';
import { createForgetting } from './application/forget.js';
import { personMoveStore } from './adapters/db/moves-store.js';
import { createPersonKeyCache } from '@mds/personal-data';
import { tokenCheckApiBases, type Config } from './config.js';
import { deployment } from './provision.js';

export { ownedTopics } from './provision.js';

/** Accepted messages arriving this close together are routed by one statement (the latency it may add). */
const ROUTING_FETCH_INTERVAL_MS = 5;

/** The registry's gRPC API (TLS when its files are set), admitting only the callers it knows; resolves to its port. */
async function serveGrpc(
  config: Config,
  { logger, lifecycle }: ServiceContext,
  implementation: ReturnType<typeof registryService>,
): Promise<number> {
  const callers = registryAuthorizer(config, logger);
  lifecycle.onStop('gRPC callers', () => callers.stop());
  const grpcServer = createGrpcServer({
    logger,
    authorizer: callers.authorizer,
    ...(config.GRPC_TLS_CERT_FILE && config.GRPC_TLS_KEY_FILE
      ? {
          tls: {
            certFile: config.GRPC_TLS_CERT_FILE,
            keyFile: config.GRPC_TLS_KEY_FILE,
            clientCaFile: config.GRPC_TLS_CLIENT_CA_FILE,
            reloadIntervalMs: config.GRPC_FILES_RELOAD_MS,
          },
        }
      : {}),
    services: [
      {
        name: REGISTRY_SERVICE,
        definition: registryV1.RegistryServiceService,
        implementation,
      },
    ],
  });
  const port = await grpcServer.start(config.GRPC_HOST ?? config.HTTP_HOST, config.GRPC_PORT);
  lifecycle.onStop('grpc', () => grpcServer.stop());
  return port;
}

/** Builds and starts the registry; everything started is registered with the lifecycle to stop in reverse. */
export async function startRegistry(
  config: Config,
  context: ServiceContext,
): Promise<{ httpPort: number; grpcPort: number }> {
  const { logger } = context;
  const now = () => new Date();
  const keyring = parseKeyring(config.REGISTRY_ENCRYPTION_KEYS);
  const foundation = await openFoundation(deployment, config, context);
  const { metrics, settings, kafka, db, deadLetters } = foundation;
  const publisher = await connectPublisher(foundation, context);
  const relay = await startOutboxRelay(foundation, context, { publisher, databaseUrl: config.DATABASE_URL });

  const accounts = createAccounts({
    db,
    store: accountStore,
    keyring,
    checkBotToken: messengerTokenChecker({
      apiBases: tokenCheckApiBases(config),
      timeoutMs: config.TOKEN_CHECK_TIMEOUT_MS,
    }),
    webhookSecretOverlapHours: config.WEBHOOK_SECRET_OVERLAP_HOURS,
    now,
    onCommitted: () => relay.poke(),
  });
  const personKeys = databasePersonKeys(db, keyring);
  const keyCache = createPersonKeyCache(personKeys, {
    ttlMs: config.PERSON_KEY_CACHE_TTL_MS,
    maxEntries: config.PERSON_KEY_CACHE_MAX_ENTRIES,
  });
  startRetention(foundation, context, config, {
    rules: [
      { table: 'processed_events', column: 'processed_at', days: config.RETENTION_PROCESSED_EVENTS_DAYS },
    ],
  });
  const forgetting = createForgetting({
    db,
    accounts: accountStore,
    links: linkStore,
    destroyPersonKeys,
    subjectId: personKeys.subjectId,
    moves: personMoveStore,
    keyCache,
    now,
    onCommitted: () => relay.poke(),
  });
  const links = createLinks({
    db,
    accounts: accountStore,
    links: linkStore,
    now,
    keys: keyCache,
    subjectId: personKeys.subjectId,
    moves: personMoveStore,
    onCommitted: () => relay.poke(),
  });
  const state: RoutingState = {
    accounts: (companyIds) => loadAccounts(db, companyIds),
    linksOfPhones: (pairs) => linksOfPhones(db, pairs),
  };
  const view = createRoutingView({ state });
  const routing = createRouting({
    publisher,
    view,
    state,
    now,
    deliveryDeadlineSeconds: config.MESSAGE_DELIVERY_DEADLINE_SECONDS,
    keys: keyCache,
  });
  const viewConsumer = routingViewFollower({
    kafka,
    logger,
    metrics,
    topicPrefix: settings.topicPrefix,
    view,
    keys: keyCache,
  });

  const grpcPort = await serveGrpc(config, context, registryService({ db, accounts, personKeys }));

  const routingConsumer = createEventConsumer<MessageEvent>({
    kafka,
    logger,
    metrics,
    groupId: `${settings.topicPrefix}client-registry.routing`,
    topicPrefix: settings.topicPrefix,
    topics: [topics.message],
    minFetchIntervalMs: ROUTING_FETCH_INTERVAL_MS,
    deadLetters,
    handleBatch: (events) => routing.handleMessages(events.map((e) => e.record)),
  });
  const linksConsumer = createEventConsumer<BotUpdateEvent | ClientRequestEvent>({
    kafka,
    logger,
    metrics,
    groupId: `${settings.topicPrefix}client-registry.links`,
    topicPrefix: settings.topicPrefix,
    topics: [topics.botUpdate, topics.clientRequest] as never,
    deadLetters,
    handleBatch: (events) =>
      links.handle(
        events.map((event) =>
          isBotUpdate(event)
            ? { kind: 'botUpdate', record: event.record }
            : { kind: 'clientRequest', record: event.record as Complete<ClientRequestEvent> },
        ),
      ),
  });

  const http = await serveService(context, foundation, {
    config,
    readiness: [
      {
        name: 'kafka',
        check: () => [publisher, routingConsumer, linksConsumer, viewConsumer].every((c) => c.healthy()),
      },
      { name: 'outbox', check: () => relay.healthy() },
    ],
    routes: (app) =>
      app.use(
        '/admin/v1',
        adminRouter({
          db,
          accounts,
          forgetting,
          resealPersonKeys: () => resealPersonKeys(db, keyring),
          adminToken: config.REGISTRY_ADMIN_TOKEN,
          dashboardKeys: dashboardPublicKeys(config.DASHBOARD_PUBLIC_KEYS ?? ''),
        }),
      ),
    startLast: [
      // The view follows the log before anything is routed: nothing changes unseen after it read a company.
      { name: 'routing view consumer', start: () => viewConsumer.start(), stop: () => viewConsumer.stop() },
      {
        name: 'kafka consumers',
        start: () => Promise.all([routingConsumer.start(), linksConsumer.start()]).then(() => undefined),
        stop: () => Promise.all([routingConsumer.stop(), linksConsumer.stop()]).then(() => undefined),
      },
    ],
  });
  return { httpPort: http.port, grpcPort };
}
