import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { hideKafkajsTimerWarning } from '@mds/logging';
import { checkJava } from './java.js';
import { hasData, recordVersionThatMade, refuseDataOfAnotherVersion } from './kafka-data-version.js';
import { ensureKafkaJars } from './kafka-jars.js';
import { loggingConfig } from './kafka-logging.js';
import { spawnDaemon, stopProcess, waitUntil, canConnect, isAlive } from './processes.js';

/**
 * The broker's JVM heap unless MDS_KAFKA_HEAP_MB says otherwise. One broker holds every test's own topics for a
 * whole `npm test` (and a long-lived local one keeps them): 512 MB ran out of heap at about 15,000 partitions.
 */
export const DEFAULT_KAFKA_HEAP_MB = 1024;
/** Each node's heap in a cluster unless MDS_KAFKA_HEAP_MB says otherwise: three fit beside the services. */
export const DEFAULT_CLUSTER_NODE_HEAP_MB = 256;
/** The Apache Kafka version run unless MDS_KAFKA_VERSION says otherwise: the current release. */
export const DEFAULT_KAFKA_VERSION = '4.4.0';
/** The other Kafka line we support and test (one integration job of `npm test` runs on it). */
export const KAFKA_3_VERSION = '3.9.1';
const CLUSTER_ID = '4L6g3nShT-eMCtK--X86sw';

/** Where one node of a KRaft cluster listens: clients on `port`, the controller quorum on `controllerPort`. */
export interface KafkaNodeAddress {
  nodeId: number;
  port: number;
  controllerPort: number;
}

export interface BrokerOptions {
  version: string;
  /** Folder for this broker's config, data and log. */
  dir: string;
  port: number;
  controllerPort: number;
  heapMb?: number;
  env?: NodeJS.ProcessEnv;
  /** This node's id in a cluster (1 when it runs alone). */
  nodeId?: number;
  /** Every node of the cluster, this one included (the static controller quorum); this one alone by default. */
  quorum?: readonly KafkaNodeAddress[];
  /** Called once the process runs, before it serves: to record its pid, so that nothing outlives a failed start. */
  onSpawned?: (broker: StartedBroker) => void;
  /**
   * Clients must authenticate (SASL/SCRAM-SHA-512 on the client listener) and are authorized by ACLs (KRaft's
   * StandardAuthorizer; nothing is allowed without an ACL). Unset: plaintext, no authorization (the default).
   */
  security?: BrokerSecurity;
}

/** SASL/SCRAM users of a secured broker: `admin` is a super user (it creates topics and ACLs). */
export interface BrokerSecurity {
  admin: ScramUser;
  /** Further users, created when the storage is formatted (their ACLs are up to the caller). */
  users?: ScramUser[];
}

export interface ScramUser {
  name: string;
  password: string;
}

const SCRAM = 'SCRAM-SHA-512';

/**
 * Replication that the cluster's size allows: with three or more nodes, 3 replicas and min ISR 2 (what
 * production runs: an acknowledged write survives the loss of one broker); alone, 1 and 1.
 */
export function replicationOf(nodes: number): { factor: number; minInSync: number } {
  const factor = Math.min(3, nodes);
  return { factor, minInSync: Math.max(1, factor - 1) };
}

function quorumOf(o: BrokerOptions): readonly KafkaNodeAddress[] {
  return o.quorum ?? [{ nodeId: o.nodeId ?? 1, port: o.port, controllerPort: o.controllerPort }];
}

export function serverProperties(o: BrokerOptions): string {
  const quorum = quorumOf(o);
  const { factor, minInSync } = replicationOf(quorum.length);
  const lines = [
    // Each node is both controller and broker: three JVMs instead of six on a small machine, and losing a
    // node takes a controller with it, which is the harder case for the drills.
    'process.roles=broker,controller',
    `node.id=${o.nodeId ?? 1}`,
    `controller.quorum.voters=${quorum.map((n) => `${n.nodeId}@127.0.0.1:${n.controllerPort}`).join(',')}`,
    `listeners=PLAINTEXT://127.0.0.1:${o.port},CONTROLLER://127.0.0.1:${o.controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${o.port}`,
    'inter.broker.listener.name=PLAINTEXT',
    'controller.listener.names=CONTROLLER',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${join(o.dir, 'data')}`,
    'num.partitions=1',
    `default.replication.factor=${factor}`,
    `min.insync.replicas=${minInSync}`,
    `offsets.topic.replication.factor=${factor}`,
    // One partition alone; with a cluster, three, so that group coordinators are spread over the brokers
    // (and losing one moves some of them), as in production (where it is 50).
    `offsets.topic.num.partitions=${quorum.length > 1 ? 3 : 1}`,
    `transaction.state.log.replication.factor=${factor}`,
    `transaction.state.log.min.isr=${minInSync}`,
    'transaction.state.log.num.partitions=1',
    'group.initial.rebalance.delay.ms=0',
    // Every topic is declared in code and provisioned at start; a typo must fail, not create a topic.
    'auto.create.topics.enable=false',
    'delete.topic.enable=true',
    'num.network.threads=2',
    'num.io.threads=4',
  ];
  if (o.security) {
    const { admin } = o.security;
    const listeners = lines.findIndex((l) => l.startsWith('listeners='));
    lines.splice(
      listeners,
      5,
      `listeners=SASL_PLAINTEXT://127.0.0.1:${o.port},CONTROLLER://127.0.0.1:${o.controllerPort}`,
      `advertised.listeners=SASL_PLAINTEXT://127.0.0.1:${o.port}`,
      'inter.broker.listener.name=SASL_PLAINTEXT',
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT',
      `sasl.enabled.mechanisms=${SCRAM}`,
      `sasl.mechanism.inter.broker.protocol=${SCRAM}`,
      `listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="${admin.name}" password="${admin.password}";`,
      'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      // The controller listener is plaintext on the loopback interface: its peers (this node's broker, the
      // other nodes) are ANONYMOUS there and must be allowed the cluster's internal requests.
      `super.users=User:${admin.name};User:ANONYMOUS`,
      'allow.everyone.if.no.acl.found=false',
    );
  }
  if (!o.version.startsWith('3.')) {
    lines.push(
      `share.coordinator.state.topic.replication.factor=${factor}`,
      `share.coordinator.state.topic.min.isr=${minInSync}`,
    );
  }
  return lines.join('\n') + '\n';
}

export interface StartedBroker {
  pid: number;
  /** This node's address (host:port). */
  brokers: string;
  logFile: string;
}

function runJava(
  binary: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(binary, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (error) => resolve({ code: -1, output: `${output}${error.message}` }));
    child.once('exit', (code) => resolve({ code: code ?? -1, output }));
  });
}

/** Writes the node's configuration, formats its storage (harmless when already formatted) and spawns it. */
async function spawnKafkaNode(o: BrokerOptions): Promise<StartedBroker> {
  const env = o.env ?? process.env;
  refuseDataOfAnotherVersion(o.dir, o.version);
  const java = checkJava(env);
  const lib = ensureKafkaJars(o.version, env);
  const fresh = !hasData(o.dir);
  mkdirSync(join(o.dir, 'data'), { recursive: true });
  mkdirSync(join(o.dir, 'logs'), { recursive: true });
  const propertiesFile = join(o.dir, 'server.properties');
  writeFileSync(propertiesFile, serverProperties(o));
  const logging = loggingConfig(o.version, o.dir);
  const heap = `${o.heapMb ?? DEFAULT_KAFKA_HEAP_MB}m`;
  const jvm = [
    `-Xms${heap}`,
    `-Xmx${heap}`,
    '-XX:+UseG1GC',
    '-XX:MaxGCPauseMillis=20',
    '-Djava.awt.headless=true',
    `-Dkafka.logs.dir=${join(o.dir, 'logs')}`,
    logging.flag,
    '-cp',
    `${lib}/*`,
  ];
  // SCRAM users of a secured broker exist from the start: KRaft takes them when the storage is formatted.
  const scram = o.security
    ? [o.security.admin, ...(o.security.users ?? [])].flatMap((u) => [
        '--add-scram',
        `${SCRAM}=[name=${u.name},password=${u.password}]`,
      ])
    : [];
  const format = await runJava(
    java.binary,
    [...jvm, 'kafka.tools.StorageTool', 'format', '-t', CLUSTER_ID, '-c', propertiesFile, '-g', ...scram],
    env,
  );
  if (format.code !== 0) throw new Error(`Kafka storage format failed:\n${format.output}`);
  if (fresh) recordVersionThatMade(o.dir, o.version);
  const logFile = join(o.dir, 'broker.log');
  const pid = spawnDaemon(java.binary, [...jvm, 'kafka.Kafka', propertiesFile], { logFile, env });
  return { pid, brokers: `127.0.0.1:${o.port}`, logFile };
}

/**
 * Starts one KRaft node (formatting its storage first, harmless when already formatted) and waits until it
 * serves: alone, a single-node cluster; with `quorum`, a node of a cluster whose other nodes run (a restart
 * after a crash or a stop), back once the cluster lists it among its live brokers.
 */
export async function startKafkaBroker(o: BrokerOptions): Promise<StartedBroker> {
  const started = await spawnKafkaNode(o);
  o.onSpawned?.(started);
  await stoppedIfNotServing(
    [started],
    waitUntil(
      quorumOf(o).length > 1 ? `Kafka node ${o.nodeId ?? 1}` : 'the Kafka broker',
      aliveAnd([started], () => brokerAnswers(started.brokers, [o.nodeId ?? 1], o.security?.admin)),
      { timeoutMs: 60_000, intervalMs: 250, onTimeout: () => tail(started.logFile) },
    ),
  );
  return started;
}

/**
 * A readiness check that fails at once when one of the started processes has exited (a broker that cannot
 * start ends itself; waiting out the timeout would only hide why), with the end of its log.
 */
function aliveAnd(started: StartedBroker[], check: () => Promise<boolean>): () => Promise<boolean> {
  return async () => {
    const exited = started.find((b) => !isAlive(b.pid));
    if (exited) {
      const log = tail(exited.logFile);
      const hint = /UnsupportedVersionException|MetadataParseException/.test(log)
        ? '\n(It cannot read its metadata log: was the data made by a newer Kafka? Start afresh, or run that version.)'
        : '';
      throw new Error(
        `the Kafka broker (pid ${exited.pid}) exited while starting; the end of ${exited.logFile}:\n${log}${hint}`,
      );
    }
    return check();
  };
}

/** Waits for `serving`; if it fails, stops the processes it was waiting for, then fails. */
async function stoppedIfNotServing(started: StartedBroker[], serving: Promise<void>): Promise<void> {
  try {
    await serving;
  } catch (error) {
    await Promise.all(started.map((b) => stopProcess(b.pid, 10_000)));
    throw error;
  }
}

export interface StartedCluster {
  /** Every node's address, comma-separated (KAFKA_BROKERS). */
  brokers: string;
  nodes: (StartedBroker & KafkaNodeAddress)[];
}

/**
 * Starts a KRaft cluster of combined controller-and-broker nodes, one folder each under `dir`
 * (`kafka-<node id>`), all at once (a static quorum elects a controller only once most of its voters
 * run), and waits until every node is a live broker of it.
 */
export async function startKafkaCluster(o: {
  version: string;
  dir: string;
  nodes: readonly KafkaNodeAddress[];
  heapMb?: number;
  env?: NodeJS.ProcessEnv;
  /** Called once every node runs, before the cluster serves (see BrokerOptions.onSpawned). */
  onSpawned?: (nodes: StartedCluster['nodes']) => void;
}): Promise<StartedCluster> {
  // Before any node starts: one refused node would leave the others waiting for a quorum.
  for (const node of o.nodes) refuseDataOfAnotherVersion(join(o.dir, `kafka-${node.nodeId}`), o.version);
  const nodes = await Promise.all(
    o.nodes.map(async (node) => ({
      ...node,
      ...(await spawnKafkaNode({
        version: o.version,
        dir: join(o.dir, `kafka-${node.nodeId}`),
        port: node.port,
        controllerPort: node.controllerPort,
        nodeId: node.nodeId,
        quorum: o.nodes,
        ...(o.heapMb === undefined ? {} : { heapMb: o.heapMb }),
        ...(o.env ? { env: o.env } : {}),
      })),
    })),
  );
  o.onSpawned?.(nodes);
  const brokers = nodes.map((n) => n.brokers).join(',');
  await stoppedIfNotServing(
    nodes,
    waitUntil(
      `a Kafka cluster of ${nodes.length} brokers`,
      aliveAnd(nodes, () =>
        brokerAnswers(
          brokers,
          o.nodes.map((n) => n.nodeId),
        ),
      ),
      {
        timeoutMs: 90_000,
        intervalMs: 250,
        onTimeout: () => nodes.map((n) => `node ${n.nodeId}:\n${tail(n.logFile, 15)}`).join('\n'),
      },
    ),
  );
  return { brokers, nodes };
}

/**
 * True when the port is open and the cluster answers a metadata request, naming a controller and every one
 * of `nodeIds` among its live brokers.
 */
export async function brokerAnswers(
  brokers: string,
  nodeIds: readonly number[] = [],
  as?: ScramUser,
): Promise<boolean> {
  hideKafkajsTimerWarning();
  const [host, port] = brokers.split(',')[0]!.split(':');
  if (!(await canConnect(Number(port), host))) return false;
  const admin = new kafkajs.Kafka({
    clientId: 'mds-local-infra',
    brokers: brokers.split(','),
    logLevel: kafkajs.logLevel.NOTHING,
    retry: { retries: 0 },
    connectionTimeout: 1000,
    ...(as
      ? { sasl: { mechanism: 'scram-sha-512' as const, username: as.name, password: as.password } }
      : {}),
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    const live = new Set(cluster.brokers.map((b) => b.nodeId));
    return live.size > 0 && cluster.controller !== null && nodeIds.every((id) => live.has(id));
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** The version line the broker logged at its latest start ("Kafka version: 4.4.0"; the log is appended to). */
export function loggedKafkaVersion(logFile: string): string | undefined {
  if (!existsSync(logFile)) return undefined;
  return [...readFileSync(logFile, 'utf8').matchAll(/Kafka version: (\S+)/g)].at(-1)?.[1];
}

function tail(file: string, lines = 30): string {
  if (!existsSync(file)) return '';
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}
