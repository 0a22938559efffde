import type { StartedTestContainer } from 'testcontainers';

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
  stop(): Promise<void>;
}

/**
 * Kafka (Confluent's image of Apache Kafka: cp-kafka 7.9 is Kafka 3.9) and PostgreSQL in containers,
 * for machines with a container engine. Chosen with MDS_INFRA=containers (or auto when an engine answers).
 */
export async function startContainers(): Promise<ContainerInfra> {
  const [{ KafkaContainer }, { PostgreSqlContainer }] = await Promise.all([
    import('@testcontainers/kafka'),
    import('@testcontainers/postgresql'),
  ]);
  const started: StartedTestContainer[] = [];
  const kafka = await new KafkaContainer('confluentinc/cp-kafka:7.9.1').withKraft().start();
  started.push(kafka);
  const postgres = await new PostgreSqlContainer('postgres:17-alpine').withDatabase('mds').start();
  started.push(postgres);
  return {
    kafkaBrokers: `${kafka.getHost()}:${kafka.getMappedPort(9093)}`,
    databaseUrl: postgres.getConnectionUri(),
    stop: async () => {
      await Promise.all(started.map((c) => c.stop()));
    },
  };
}
