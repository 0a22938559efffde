// Kafka and PostgreSQL for a named run: reused, started as processes (recorded in the run's state, see
// infra-state.ts; Kafka's nodes in infra-kafka.ts), or containers; and stopped by process id.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { containerRuntimeAvailable, startContainers } from './containers.js';
import { ensureKafka } from './infra-kafka.js';
import { DEFAULT_KAFKA_VERSION } from './kafka-broker.js';
import { nodesOf, portOrFree, readState, removeRunDir, writeState } from './infra-state.js';
import { answers, startPostgres } from './postgres.js';
import { isAlive, stopProcess } from './processes.js';
import { runDir } from './paths.js';

export type { KafkaNodeRecord } from './infra-state.js';

export interface InfraOptions {
  /** Names the run folder: "dev" keeps its data between starts; test runs use a fresh one each time. */
  name: string;
  /** Delete the run folder first and again when stopped (test runs). */
  ephemeral?: boolean;
  /** Preferred ports (a busy one is replaced by a free one); random free ports when omitted. */
  kafkaPort?: number;
  postgresPort?: number;
  /**
   * Kafka brokers to run: 1 by default; 3 for the production topology (a KRaft cluster, replication factor
   * 3 and min ISR 2 for every topic). Node n listens on `kafkaPort + 2(n - 1)`, its controller on the port
   * after. A run keeps one shape: its data is refused to a cluster of another size.
   */
  brokerCount?: number;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

export interface Infra {
  kafkaBrokers: string;
  databaseUrl: string;
  /** Apache Kafka version the broker reported, when we run it. */
  kafkaVersion: string | undefined;
  postgresVersion: string | undefined;
  /** What this call started (and so what `stop` will stop). */
  startedHere: { kafka: boolean; postgres: boolean };
  stop(): Promise<void>;
}

/**
 * Brings up a Kafka broker and PostgreSQL, or reuses what is already there:
 * KAFKA_BROKERS / DATABASE_URL when set, containers when MDS_INFRA asks for them, otherwise processes
 * started from Kafka's Maven Central jars and the machine's PostgreSQL, recorded by process id so that
 * `stop` (or `stopInfra`) stops exactly those. Starting twice is harmless: a live recorded process is reused.
 */
export async function startInfra(o: InfraOptions): Promise<Infra> {
  const env = o.env ?? process.env;
  const log = o.log ?? (() => undefined);
  const mode = env.MDS_INFRA ?? 'local';
  if (mode !== 'local' && mode !== 'containers' && mode !== 'auto') {
    throw new Error(`MDS_INFRA must be local, containers or auto, not "${mode}"`);
  }
  const external = { kafka: env.KAFKA_BROKERS, postgres: env.DATABASE_URL };
  if (external.kafka && external.postgres) {
    return {
      kafkaBrokers: external.kafka,
      databaseUrl: external.postgres,
      kafkaVersion: undefined,
      postgresVersion: undefined,
      startedHere: { kafka: false, postgres: false },
      stop: () => Promise.resolve(),
    };
  }
  if (mode !== 'local') {
    if (mode === 'containers' || (await containerRuntimeAvailable())) {
      const version = env.MDS_KAFKA_VERSION ?? DEFAULT_KAFKA_VERSION;
      log(`starting Apache Kafka ${version} and PostgreSQL with testcontainers`);
      const c = await startContainers(version);
      return {
        kafkaBrokers: external.kafka ?? c.kafkaBrokers,
        databaseUrl: external.postgres ?? c.databaseUrl,
        kafkaVersion: external.kafka ? undefined : c.kafkaVersion,
        postgresVersion: undefined,
        startedHere: { kafka: !external.kafka, postgres: !external.postgres },
        stop: () => c.stop(),
      };
    }
  }

  const dir = runDir(o.name, env);
  if (o.ephemeral) removeRunDir(dir);
  mkdirSync(dir, { recursive: true });
  const state = readState(o.name, env);
  const startedHere = { kafka: false, postgres: false };

  let kafkaBrokers = external.kafka;
  let kafkaVersion: string | undefined;
  if (!kafkaBrokers) {
    const kafka = await ensureKafka(o, dir, state.kafka, env, log, (record) => {
      state.kafka = record;
      writeState(o.name, env, state);
      return record;
    });
    startedHere.kafka = kafka.started;
    kafkaBrokers = kafka.record.brokers;
    kafkaVersion = kafka.record.version;
  }

  let databaseUrl = external.postgres;
  let postgresVersion: string | undefined;
  if (!databaseUrl) {
    if (state.postgres && isAlive(state.postgres.pid) && (await answers(state.postgres.databaseUrl))) {
      log(`reusing PostgreSQL ${state.postgres.version} (pid ${state.postgres.pid})`);
    } else {
      const port = await portOrFree(o.postgresPort);
      log(`starting PostgreSQL on 127.0.0.1:${port}`);
      const started = await startPostgres({
        dir: join(dir, 'postgres'),
        port,
        database: 'mds',
        fast: o.ephemeral ?? false,
        env,
      });
      state.postgres = { ...started, fast: o.ephemeral ?? false, startedAt: new Date().toISOString() };
      writeState(o.name, env, state);
      startedHere.postgres = true;
    }
    databaseUrl = state.postgres.databaseUrl;
    postgresVersion = state.postgres.version;
  }

  return {
    kafkaBrokers,
    databaseUrl,
    kafkaVersion,
    postgresVersion,
    startedHere,
    stop: async () => {
      await stopInfra(o.name, { env, only: startedHere, removeData: o.ephemeral ?? false });
    },
  };
}

/** Stops the processes recorded for a named run, by process id, and nothing else. */
export async function stopInfra(
  name: string,
  options: {
    env?: NodeJS.ProcessEnv;
    only?: { kafka: boolean; postgres: boolean };
    removeData?: boolean;
  } = {},
): Promise<string[]> {
  const env = options.env ?? process.env;
  const state = readState(name, env);
  const stopped: string[] = [];
  const only = options.only ?? { kafka: true, postgres: true };
  // Both at once (they do not depend on each other), so a caller with a short teardown budget does
  // not leave the second running.
  const { kafka, postgres } = state;
  await Promise.all([
    ...(only.kafka && kafka ? nodesOf(kafka).map((n) => stopProcess(n.pid, 15_000)) : []),
    // SIGINT is PostgreSQL's "fast" shutdown: roll back open transactions, checkpoint, exit.
    only.postgres && postgres ? stopProcess(postgres.pid, 15_000, 'SIGINT') : undefined,
  ]);
  if (only.kafka && kafka) {
    stopped.push(
      `Kafka (pid ${nodesOf(kafka)
        .map((n) => n.pid)
        .join(', ')})`,
    );
    delete state.kafka;
  }
  if (only.postgres && postgres) {
    stopped.push(`PostgreSQL (pid ${postgres.pid})`);
    delete state.postgres;
  }
  const dir = runDir(name, env);
  if (options.removeData) removeRunDir(dir);
  else if (existsSync(dir)) writeState(name, env, state);
  return stopped;
}

/**
 * Stops the recorded PostgreSQL (fast shutdown: open connections are cut, as in a real restart) and starts
 * it again on the same port and data (failure drills).
 */
export async function restartPostgres(name: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const state = readState(name, env);
  if (!state.postgres) throw new Error(`no PostgreSQL recorded for run "${name}"`);
  const url = new URL(state.postgres.databaseUrl);
  await stopProcess(state.postgres.pid, 15_000, 'SIGINT');
  const started = await startPostgres({
    dir: join(runDir(name, env), 'postgres'),
    port: Number(url.port),
    database: url.pathname.slice(1),
    fast: state.postgres.fast ?? false,
    env,
  });
  state.postgres = { ...state.postgres, pid: started.pid, startedAt: new Date().toISOString() };
  writeState(name, env, state);
}
