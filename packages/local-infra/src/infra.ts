import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { containerRuntimeAvailable, startContainers } from './containers.js';
import {
  brokerAnswers,
  DEFAULT_KAFKA_HEAP_MB,
  DEFAULT_KAFKA_VERSION,
  loggedKafkaVersion,
  startKafkaBroker,
} from './kafka-broker.js';
import { answers, removePostgresDataElsewhere, startPostgres } from './postgres.js';
import { canConnect, freePort, isAlive, stopProcess } from './processes.js';
import { runDir } from './paths.js';

export interface InfraOptions {
  /** Names the run folder: "dev" keeps its data between starts; test runs use a fresh one each time. */
  name: string;
  /** Delete the run folder first and again when stopped (test runs). */
  ephemeral?: boolean;
  /** Preferred ports (a busy one is replaced by a free one); random free ports when omitted. */
  kafkaPort?: number;
  postgresPort?: number;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

interface ProcessRecord {
  pid: number;
  /** Set when started by this project's scripts, so stop knows it is ours to stop. */
  startedAt: string;
}

interface InfraState {
  kafka?: ProcessRecord & {
    brokers: string;
    version: string;
    logFile: string;
    controllerPort: number;
    /** Absent in states written before it was recorded: the default then. */
    heapMb?: number;
  };
  postgres?: ProcessRecord & { databaseUrl: string; version: string; logFile: string; fast?: boolean };
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

function stateFile(name: string, env: NodeJS.ProcessEnv): string {
  return join(runDir(name, env), 'state.json');
}

function readState(name: string, env: NodeJS.ProcessEnv): InfraState {
  const file = stateFile(name, env);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as InfraState) : {};
}

function writeState(name: string, env: NodeJS.ProcessEnv, state: InfraState): void {
  writeFileSync(stateFile(name, env), JSON.stringify(state, null, 2));
}

async function portOrFree(preferred: number | undefined): Promise<number> {
  if (preferred !== undefined && !(await canConnect(preferred))) return preferred;
  return freePort();
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
      log('starting Kafka and PostgreSQL with testcontainers');
      const c = await startContainers();
      return {
        kafkaBrokers: external.kafka ?? c.kafkaBrokers,
        databaseUrl: external.postgres ?? c.databaseUrl,
        kafkaVersion: undefined,
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
    if (state.kafka && isAlive(state.kafka.pid) && (await brokerAnswers(state.kafka.brokers))) {
      log(`reusing Kafka ${state.kafka.version} at ${state.kafka.brokers} (pid ${state.kafka.pid})`);
    } else {
      const version = env.MDS_KAFKA_VERSION ?? DEFAULT_KAFKA_VERSION;
      const port = await portOrFree(o.kafkaPort);
      const controllerPort = await portOrFree(
        state.kafka?.controllerPort ?? (o.kafkaPort ? o.kafkaPort + 1 : undefined),
      );
      const heapMb = Number(env.MDS_KAFKA_HEAP_MB ?? DEFAULT_KAFKA_HEAP_MB);
      log(`starting Apache Kafka ${version} on 127.0.0.1:${port}`);
      const broker = await startKafkaBroker({
        version,
        dir: join(dir, 'kafka'),
        port,
        controllerPort,
        env,
        heapMb,
      });
      state.kafka = {
        pid: broker.pid,
        brokers: broker.brokers,
        version: loggedKafkaVersion(broker.logFile) ?? version,
        logFile: broker.logFile,
        controllerPort,
        heapMb,
        startedAt: new Date().toISOString(),
      };
      writeState(o.name, env, state);
      startedHere.kafka = true;
    }
    kafkaBrokers = state.kafka.brokers;
    kafkaVersion = state.kafka.version;
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
    only.kafka && kafka ? stopProcess(kafka.pid, 15_000) : undefined,
    // SIGINT is PostgreSQL's "fast" shutdown: roll back open transactions, checkpoint, exit.
    only.postgres && postgres ? stopProcess(postgres.pid, 15_000, 'SIGINT') : undefined,
  ]);
  if (only.kafka && kafka) {
    stopped.push(`Kafka (pid ${kafka.pid})`);
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

/** Stops the recorded broker process and starts it again on the same port and data (failure drills). */
export async function restartKafka(name: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const state = readState(name, env);
  if (!state.kafka) throw new Error(`no Kafka broker recorded for run "${name}"`);
  const { brokers, controllerPort, version, heapMb } = state.kafka;
  await stopProcess(state.kafka.pid, 15_000);
  const port = Number(brokers.split(':')[1]);
  const broker = await startKafkaBroker({
    version,
    dir: join(runDir(name, env), 'kafka'),
    port,
    controllerPort,
    env,
    heapMb: heapMb ?? DEFAULT_KAFKA_HEAP_MB,
  });
  state.kafka = { ...state.kafka, pid: broker.pid, startedAt: new Date().toISOString() };
  writeState(name, env, state);
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

/** Removes a run's folder, and its PostgreSQL data if that had to live elsewhere. */
function removeRunDir(dir: string): void {
  removePostgresDataElsewhere(join(dir, 'postgres'));
  rmSync(dir, { recursive: true, force: true });
}
