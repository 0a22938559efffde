export {
  startInfra,
  stopInfra,
  restartPostgres,
  type KafkaNodeRecord,
  type Infra,
  type InfraOptions,
} from './infra.js';
export { restartKafka, kafkaNodes, stopKafkaNode, startKafkaNode } from './infra-kafka.js';
export {
  startKafkaBroker,
  startKafkaCluster,
  brokerAnswers,
  replicationOf,
  DEFAULT_KAFKA_VERSION,
  KAFKA_3_VERSION,
  loggedKafkaVersion,
  type KafkaNodeAddress,
  type StartedBroker,
  type BrokerSecurity,
  type ScramUser,
} from './kafka-broker.js';
export { ensureKafkaJars } from './kafka-jars.js';
export { createDatabase, startPostgres, findPostgresBin } from './postgres.js';
export { checkJava } from './java.js';
export { repoRoot, runDir, cacheDir } from './paths.js';
export { freePort, canConnect, isAlive, spawnDaemon, stopProcess, waitUntil } from './processes.js';
