// The run's Kafka: started or reused for startInfra, and its nodes stopped, started and restarted by
// process id for the failure drills.
import { existsSync } from 'node:fs';
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
import type { InfraOptions } from './infra.js';
import { sameKafkaLine } from './kafka-data-version.js';
import {
  nodeDir,
  nodesOf,
  portOrFree,
  readState,
  writeState,
  type InfraState,
  type KafkaNodeRecord,
  type KafkaRecord,
} from './infra-state.js';
import { isAlive, stopProcess } from './processes.js';
import { runDir } from './paths.js';

/** Reuses the run's live Kafka, or starts one (a node, or a cluster of `brokerCount`) on its data. */
export async function ensureKafka(
  o: InfraOptions,
  dir: string,
  recorded: KafkaRecord | undefined,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
  /** Writes a record of processes this call started into the run's state; answers it. */
  persist: (record: KafkaRecord) => KafkaRecord,
): Promise<{ record: KafkaRecord; started: boolean }> {
  const count = o.brokerCount ?? 1;
  const version = env.MDS_KAFKA_VERSION ?? DEFAULT_KAFKA_VERSION;
  if (recorded) {
    const nodes = nodesOf(recorded);
    if (nodes.every((n) => isAlive(n.pid)) && (await brokerAnswers(recorded.brokers))) {
      if (nodes.length !== count) {
        throw new Error(
          `run "${o.name}" has a Kafka of ${nodes.length} broker(s) running, not ${count}: stop it first ` +
            `(npm run infra:down -- --name ${o.name})`,
        );
      }
      if (!sameKafkaLine(recorded.version, version)) {
        throw new Error(
          `run "${o.name}" has Apache Kafka ${recorded.version} running, and this start asks for ${version}: ` +
            `run with MDS_KAFKA_VERSION=${recorded.version}, or stop it first (npm run infra:down -- --name ${o.name}).`,
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
