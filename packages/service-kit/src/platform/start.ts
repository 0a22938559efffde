// The opening and closing every service's start function shares, written once: a service declares what it owns
// (its deployment), what it serves (routes) and what it starts last (consumers); the order is the kit's.
import type { ErrorRequestHandler, Express } from 'express';
import type { Registry } from 'prom-client';
import { databaseAnswers, deadLetterTable, openDatabase, type Knex } from '@mds/db';
import {
  createEventPublisher,
  createKafkaClient,
  kafkaMetrics,
  kafkaSettingsFromEnv,
  type DeadLetterSink,
  type EventPublisher,
  type Kafka,
  type KafkaMetrics,
  type KafkaSettings,
} from '@mds/kafka';
import { createOutboxRelay, type OutboxRelay } from '@mds/outbox';
import { createRetention, deadLettersRule, type RetentionRule } from '@mds/personal-data';
import { provision, type DeployStepConfig, type ServiceDeployment } from './deployment.js';
import {
  createHttpApp,
  createMetricsRegistry,
  notFoundHandler,
  problemHandler,
  serveHttp,
  type OpsOptions,
  type ReadinessCheck,
  type ServiceContext,
} from '../index.js';

/** What every service opens first: metrics, Kafka, its database (closed last) with schema and topics up to date. */
export interface ServiceFoundation {
  /** The service's name (its deployment's): its metrics, Kafka client and connections are named by it. */
  service: string;
  registry: Registry;
  metrics: KafkaMetrics;
  settings: KafkaSettings;
  kafka: Kafka;
  db: Knex;
  /** The `dead_letters` table every consumer group of the service sets aside what it cannot handle in (its retention ages it). */
  deadLetters: DeadLetterSink;
}

/**
 * Opens the service's metrics registry, Kafka client and database pool (registered to close after everything
 * that writes to it), then migrates and provisions what it owns: the deploy step has normally done that
 * already; doing it again is cheap and covers a plain start (topics that exist are left as they are: their
 * settings are the deploy step's, whose Kafka user may change them).
 */
export async function openFoundation(
  deployment: ServiceDeployment,
  config: DeployStepConfig & { DATABASE_POOL_MAX: number },
  { logger, lifecycle }: ServiceContext,
): Promise<ServiceFoundation> {
  const name = deployment.service;
  const registry = createMetricsRegistry(name);
  const metrics = kafkaMetrics(registry);
  const settings = kafkaSettingsFromEnv(config, name);
  const kafka = createKafkaClient(settings, logger);
  const db = await openDatabase({
    url: config.DATABASE_URL,
    schema: deployment.schema,
    poolMax: config.DATABASE_POOL_MAX,
    applicationName: name,
  });
  lifecycle.onStop('database', () => db.destroy());
  await provision(deployment, { db, kafka, settings, logger, existing: 'leave' });
  return { service: name, registry, metrics, settings, kafka, db, deadLetters: deadLetterTable(db) };
}

/** The service's idempotent producer, connected, and registered to disconnect before the database closes. */
export async function connectPublisher(
  foundation: ServiceFoundation,
  { logger, lifecycle }: ServiceContext,
  options: { timeoutMs?: number } = {},
): Promise<EventPublisher> {
  const publisher = createEventPublisher({
    kafka: foundation.kafka,
    logger,
    topicPrefix: foundation.settings.topicPrefix,
    metrics: foundation.metrics,
    ...options,
  });
  await publisher.connect();
  lifecycle.onStop('kafka producer', () => publisher.disconnect());
  return publisher;
}

/**
 * The relay that publishes what the service wrote to its outbox with its state: started, and registered to
 * stop before the producer it publishes with.
 */
export async function startOutboxRelay(
  foundation: ServiceFoundation,
  { logger, lifecycle }: ServiceContext,
  o: { publisher: EventPublisher; databaseUrl: string; pollMs?: number },
): Promise<OutboxRelay> {
  const relay = createOutboxRelay({
    name: foundation.service,
    db: foundation.db,
    databaseUrl: o.databaseUrl,
    publisher: o.publisher,
    logger,
    ...(o.pollMs === undefined ? {} : { pollMs: o.pollMs }),
    registry: foundation.registry,
  });
  await relay.start();
  lifecycle.onStop('outbox relay', () => relay.stop());
  return relay;
}

/**
 * Deletes the rows of the service's tables that outlived their rules, every RETENTION_INTERVAL_MINUTES in
 * batches of RETENTION_BATCH_SIZE (each run until none is left past its age), until the service stops. The
 * `dead_letters` table, where the service has one, ages by RETENTION_DEAD_LETTERS_DAYS without being named.
 */
export function startRetention(
  foundation: ServiceFoundation,
  { logger, lifecycle }: ServiceContext,
  config: {
    RETENTION_BATCH_SIZE: number;
    RETENTION_INTERVAL_MINUTES: number;
    RETENTION_DEAD_LETTERS_DAYS: number;
  },
  o: { rules: readonly RetentionRule[]; name?: string },
): void {
  const stop = createRetention({
    db: foundation.db,
    logger,
    registry: foundation.registry,
    batchSize: config.RETENTION_BATCH_SIZE,
    rules: retentionRulesOf(config, o.rules),
  }).start(config.RETENTION_INTERVAL_MINUTES * 60_000);
  lifecycle.onStop(o.name ?? 'retention', () => stop());
}

/** The service's own rules, and the `dead_letters` table's (every service's schema has one). */
export function retentionRulesOf(
  config: { RETENTION_DEAD_LETTERS_DAYS: number },
  rules: readonly RetentionRule[],
): RetentionRule[] {
  return [...rules, deadLettersRule(config.RETENTION_DEAD_LETTERS_DAYS)];
}

/** Something started once the service serves HTTP (a consumer, an ingestion): stopped before HTTP closes. */
export interface StartedLast {
  /** The lifecycle's name for it (in the "stopped" log lines). */
  name: string;
  start: () => Promise<void>;
  /** Left out when its stop was registered earlier, where it belongs in the order. */
  stop?: () => Promise<void>;
}

export interface ServeOptions {
  config: { HTTP_HOST: string; HTTP_PORT: number; OPS_PORT?: number | undefined };
  /** Every check must pass for /readyz to answer 200 (besides the database answering and start-up having finished). */
  readiness: ReadinessCheck[];
  /** Ops routes on a listener of their own; by default when OPS_PORT is set. */
  separateOps?: boolean;
  /** The service's own routes, added after the request id, access log and ops routes. */
  routes(app: Express): void;
  /** Error handlers that run before the problem handler (which turns the rest into problems). */
  errorHandlers?: ErrorRequestHandler[];
  /** Started in this order once HTTP serves; the service is ready once all have started. */
  startLast: StartedLast[];
}

/**
 * The closing every service shares: the HTTP app with the service's routes, an unknown path a 404 problem and
 * every error a problem; the public and ops listeners; then what starts last, in order. /readyz answers 200
 * from then on, and 503 again as soon as shutdown begins.
 */
export async function serveService(
  { logger, lifecycle }: ServiceContext,
  { registry, db }: ServiceFoundation,
  o: ServeOptions,
): Promise<{ port: number; opsPort?: number }> {
  let started = false;
  const ops: OpsOptions = {
    logger,
    registry,
    isReady: () => started && !lifecycle.isStopping,
    readiness: [{ name: 'database', check: () => databaseAnswers(db) }, ...o.readiness],
  };
  const app = createHttpApp({ ...ops, separateOps: o.separateOps ?? o.config.OPS_PORT !== undefined });
  o.routes(app);
  app.use(notFoundHandler());
  for (const handler of o.errorHandlers ?? []) app.use(handler);
  app.use(problemHandler(logger));
  const http = await serveHttp(app, ops, o.config, lifecycle);
  for (const part of o.startLast) {
    await part.start();
    if (part.stop) lifecycle.onStop(part.name, part.stop);
  }
  started = true;
  return http;
}
