import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { containerRuntimeAvailable, startContainers } from './containers.js';
import {
  brokerAnswers,
  DEFAULT_CLUSTER_NODE_HEAP_MB,
  DEFAULT_KAFKA_HEAP_MB,
  DEFAULT_KAFKA_VERSION,
  loggedKafkaVersion,
  startKafkaBroker,
  startKafkaCluster,
  type KafkaNodeAddress,
  type StartedBroker,
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
  /**
   * Kafka brokers to run: 1 by default; 3 for the production topology (a KRaft cluster, replication factor
   * 3 and min ISR 2 for every topic). Node n listens on `kafkaPort + 2(n - 1)`, its controller on the port
   * after. A run keeps one shape: its data is refused to a cluster of another size.
   */
  brokerCount?: number;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

interface ProcessRecord {
  pid: number;
  /** Set when started by this project's scripts, so stop knows it is ours to stop. */
  startedAt: string;
}

/** One Kafka node as recorded. */
export interface KafkaNodeRecord extends ProcessRecord, KafkaNodeAddress {
  logFile: string;
}

interface KafkaRecord {
  brokers: string;
  version: string;
  /** Absent in states written before it was recorded: the default then. */
  heapMb?: number;
  /** Absent in states written before clusters: one node then, described by the fields below. */
  nodes?: KafkaNodeRecord[];
  pid?: number;
  startedAt?: string;
  logFile?: string;
  controllerPort?: number;
}

interface InfraState {
  kafka?: KafkaRecord;
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

/** The recorded nodes, also of a state written before clusters (one node, id 1). */
function nodesOf(kafka: KafkaRecord): KafkaNodeRecord[] {
  if (kafka.nodes) return kafka.nodes;
  return [
    {
      nodeId: 1,
      pid: kafka.pid!,
      startedAt: kafka.startedAt!,
      port: Number(kafka.brokers.split(':')[1]),
      controllerPort: kafka.controllerPort!,
      logFile: kafka.logFile!,
    },
  ];
}

/** A node's folder: `kafka` when it runs alone (as before clusters), `kafka-<id>` in a cluster. */
function nodeDir(runFolder: string, nodes: number, nodeId: number): string {
  return join(runFolder, nodes === 1 ? 'kafka' : `kafka-${nodeId}`);
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

/** Reuses the run's live Kafka, or starts one (a node, or a cluster of `brokerCount`) on its data. */
async function ensureKafka(
  o: InfraOptions,
  dir: string,
  recorded: KafkaRecord | undefined,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
  /** Writes a record of processes this call started into the run's state; answers it. */
  persist: (record: KafkaRecord) => KafkaRecord,
): Promise<{ record: KafkaRecord; started: boolean }> {
  const count = o.brokerCount ?? 1;
  if (recorded) {
    const nodes = nodesOf(recorded);
    if (nodes.every((n) => isAlive(n.pid)) && (await brokerAnswers(recorded.brokers))) {
      if (nodes.length !== count) {
        throw new Error(
          `run "${o.name}" has a Kafka of ${nodes.length} broker(s) running, not ${count}: stop it first ` +
            `(npm run infra:down -- --name ${o.name})`,
        );
      }
      log(
        `reusing Kafka ${recorded.version} at ${recorded.brokers} (pid ${nodes.map((n) => n.pid).join(', ')})`,
      );
      return { record: recorded, started: false };
    }
  }
  // Topics, offsets and the services' state in PostgreSQL belong together: a run's data is one shape.
  const otherShape = count === 1 ? nodeDir(dir, 2, 1) : nodeDir(dir, 1, 1);
  if (existsSync(otherShape)) {
    throw new Error(
      `${dir} holds the data of a Kafka of ${count === 1 ? 'several brokers' : 'one broker'}, and PostgreSQL ` +
        `the services' state that goes with it: remove ${dir} to start afresh with ${count} broker(s) ` +
        '(`npm start -- --fresh` does).',
    );
  }
  const version = env.MDS_KAFKA_VERSION ?? DEFAULT_KAFKA_VERSION;
  const heapMb = Number(
    env.MDS_KAFKA_HEAP_MB ?? (count === 1 ? DEFAULT_KAFKA_HEAP_MB : DEFAULT_CLUSTER_NODE_HEAP_MB),
  );
  const previous = recorded ? nodesOf(recorded) : [];
  const addresses: KafkaNodeAddress[] = [];
  for (let nodeId = 1; nodeId <= count; nodeId++) {
    const before = previous.find((n) => n.nodeId === nodeId);
    const preferred = o.kafkaPort === undefined ? undefined : o.kafkaPort + 2 * (nodeId - 1);
    const port = await portOrFree(before?.port ?? preferred);
    const controllerPort = await portOrFree(
      before?.controllerPort ?? (preferred === undefined ? undefined : preferred + 1),
    );
    addresses.push({ nodeId, port, controllerPort });
  }
  log(
    `starting Apache Kafka ${version} on ${addresses.map((a) => `127.0.0.1:${a.port}`).join(', ')}` +
      (count > 1 ? ` (${count} brokers, replication factor 3, min ISR 2, ${heapMb} MB heap each)` : ''),
  );
  const startedAt = new Date().toISOString();
  let record = undefined as KafkaRecord | undefined;
  // Recorded as soon as the processes exist, so that `stopInfra` finds them even if they never serve.
  const onSpawned = (started: (KafkaNodeAddress & StartedBroker)[]) => {
    record = persist({
      brokers: started.map((n) => n.brokers).join(','),
      version,
      heapMb,
      nodes: started.map(({ nodeId, port, controllerPort, pid, logFile }) => ({
        nodeId,
        port,
        controllerPort,
        pid,
        logFile,
        startedAt,
      })),
    });
  };
  if (count === 1) {
    const [address] = addresses as [KafkaNodeAddress];
    await startKafkaBroker({
      version,
      dir: nodeDir(dir, 1, 1),
      ...address,
      env,
      heapMb,
      onSpawned: (broker) => onSpawned([{ ...address, ...broker }]),
    });
  } else {
    await startKafkaCluster({ version, dir, nodes: addresses, heapMb, env, onSpawned });
  }
  const started = record!; // onSpawned ran before either start resolved
  const logged = loggedKafkaVersion(started.nodes![0]!.logFile) ?? version;
  return { record: persist({ ...started, version: logged }), started: true };
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

function recordedKafka(name: string, env: NodeJS.ProcessEnv): { state: InfraState; kafka: KafkaRecord } {
  const state = readState(name, env);
  if (!state.kafka) throw new Error(`no Kafka broker recorded for run "${name}"`);
  return { state, kafka: state.kafka };
}

/** Starts a recorded node again on its ports and data, and records its new process. */
async function startRecordedNode(name: string, nodeId: number, env: NodeJS.ProcessEnv): Promise<void> {
  const { kafka } = recordedKafka(name, env);
  const nodes = nodesOf(kafka);
  const node = nodes.find((n) => n.nodeId === nodeId);
  if (!node) throw new Error(`run "${name}" has no Kafka node ${nodeId}`);
  const started = await startKafkaBroker({
    version: kafka.version,
    dir: nodeDir(runDir(name, env), nodes.length, nodeId),
    port: node.port,
    controllerPort: node.controllerPort,
    nodeId,
    quorum: nodes,
    env,
    heapMb: kafka.heapMb ?? DEFAULT_KAFKA_HEAP_MB,
  });
  // Read again: another node may have been recorded meanwhile.
  const latest = recordedKafka(name, env);
  latest.state.kafka = {
    ...latest.kafka,
    nodes: nodesOf(latest.kafka).map((n) =>
      n.nodeId === nodeId ? { ...n, pid: started.pid, startedAt: new Date().toISOString() } : n,
    ),
  };
  writeState(name, env, latest.state);
}

/**
 * Stops the recorded broker process(es) and starts them again on the same ports, data and heap (failure
 * drills): a cluster's nodes all stop first, then start together.
 */
export async function restartKafka(name: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const { kafka } = recordedKafka(name, env);
  const nodes = nodesOf(kafka);
  await Promise.all(nodes.map((n) => stopProcess(n.pid, 15_000)));
  if (nodes.length === 1) {
    await startRecordedNode(name, nodes[0]!.nodeId, env);
    return;
  }
  await Promise.all(nodes.map((n) => startRecordedNode(name, n.nodeId, env)));
}

/** A run's Kafka nodes as recorded, and whether each process lives. */
export function kafkaNodes(
  name: string,
  env: NodeJS.ProcessEnv = process.env,
): (KafkaNodeRecord & { alive: boolean; address: string })[] {
  return nodesOf(recordedKafka(name, env).kafka).map((n) => ({
    ...n,
    alive: isAlive(n.pid),
    address: `127.0.0.1:${n.port}`,
  }));
}

/**
 * Stops one node of a run's Kafka by process id (failure drills): SIGTERM is a clean shutdown (leaders move
 * first), SIGKILL a crash. The node stays recorded, to be started again with `startKafkaNode`.
 */
export async function stopKafkaNode(
  name: string,
  nodeId: number,
  options: { signal?: NodeJS.Signals; env?: NodeJS.ProcessEnv } = {},
): Promise<void> {
  const node = kafkaNodes(name, options.env).find((n) => n.nodeId === nodeId);
  if (!node) throw new Error(`run "${name}" has no Kafka node ${nodeId}`);
  await stopProcess(node.pid, 15_000, options.signal ?? 'SIGTERM');
}

/** Starts a stopped node of a run's Kafka again on its ports and data; resolves once it is a live broker. */
export async function startKafkaNode(
  name: string,
  nodeId: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const node = kafkaNodes(name, env).find((n) => n.nodeId === nodeId);
  if (!node) throw new Error(`run "${name}" has no Kafka node ${nodeId}`);
  if (node.alive) throw new Error(`Kafka node ${nodeId} of run "${name}" is running (pid ${node.pid})`);
  await startRecordedNode(name, nodeId, env);
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
