import type { StartedTestContainer } from 'testcontainers';
import { brokerAnswers } from './kafka-broker.js';
import { waitUntil } from './processes.js';

/** True when testcontainers finds a working container engine (Docker, Podman...). */
export async function containerRuntimeAvailable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

export interface ContainerInfra {
  kafkaBrokers: string;
  databaseUrl: string;
  kafkaVersion: string;
  stop(): Promise<void>;
}

const CLIENT_PORT = 9092;
const START_SCRIPT = '/tmp/mds-start-kafka.sh';
const WAITING = 'waiting for the start script';

/**
 * The environment of Apache Kafka's own image (`apache/kafka:<version>`, configured by KAFKA_* variables) for
 * a single KRaft node configured as the local broker is (see kafka-broker.ts): clients on 9092, the broker's
 * own traffic on a listener of its own (the clients' one is advertised at the host's mapped port, which the
 * container cannot reach), one partition for offsets and transactions, no topic created by accident.
 */
export function kafkaContainerEnvironment(version: string): Record<string, string> {
  return {
    CLUSTER_ID: '4L6g3nShT-eMCtK--X86sw',
    KAFKA_NODE_ID: '1',
    KAFKA_PROCESS_ROLES: 'broker,controller',
    KAFKA_LISTENERS: `PLAINTEXT://0.0.0.0:${CLIENT_PORT},BROKER://0.0.0.0:9094,CONTROLLER://0.0.0.0:9093`,
    KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT',
    KAFKA_INTER_BROKER_LISTENER_NAME: 'BROKER',
    KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
    KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
    KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
    KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '1',
    KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
    KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
    KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS: '1',
    KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
    KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
    ...(version.startsWith('3.')
      ? {}
      : {
          KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR: '1',
          KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR: '1',
        }),
  };
}

/**
 * Kafka (Apache Kafka's own image, the same version as the local broker: MDS_KAFKA_VERSION or the default)
 * and PostgreSQL in containers, for machines with a container engine. Chosen with MDS_INFRA=containers (or
 * auto when an engine answers).
 */
export async function startContainers(kafkaVersion: string): Promise<ContainerInfra> {
  const [{ GenericContainer, Wait }, { PostgreSqlContainer }] = await Promise.all([
    import('testcontainers'),
    import('@testcontainers/postgresql'),
  ]);
  const started: StartedTestContainer[] = [];
  const stop = async () => {
    await Promise.all(started.map((c) => c.stop()));
  };
  try {
    // The advertised address is the host's mapped port, known only once the container runs: the container
    // waits for a start script that names it (as testcontainers' own Kafka module does), then runs the image's.
    const kafka = await new GenericContainer(`apache/kafka:${kafkaVersion}`)
      .withExposedPorts(CLIENT_PORT)
      .withEnvironment(kafkaContainerEnvironment(kafkaVersion))
      .withEntrypoint(['sh'])
      .withCommand([
        '-c',
        `echo '${WAITING}'; while [ ! -f ${START_SCRIPT} ]; do sleep 0.1; done; sh ${START_SCRIPT}`,
      ])
      .withWaitStrategy(Wait.forLogMessage(WAITING))
      .start();
    started.push(kafka);
    const kafkaBrokers = `${kafka.getHost()}:${kafka.getMappedPort(CLIENT_PORT)}`;
    await kafka.copyContentToContainer([
      {
        content: `export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://${kafkaBrokers},BROKER://localhost:9094\nexec /etc/kafka/docker/run\n`,
        target: START_SCRIPT,
        mode: 0o755,
      },
    ]);
    await waitUntil(`Apache Kafka ${kafkaVersion} in its container`, () => brokerAnswers(kafkaBrokers), {
      timeoutMs: 180_000,
      intervalMs: 500,
    });
    const postgres = await new PostgreSqlContainer('postgres:17-alpine').withDatabase('mds').start();
    started.push(postgres);
    return { kafkaBrokers, databaseUrl: postgres.getConnectionUri(), kafkaVersion, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
