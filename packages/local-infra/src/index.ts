export {
  startInfra,
  stopInfra,
  restartKafka,
  restartPostgres,
  kafkaNodes,
  stopKafkaNode,
  startKafkaNode,
  type KafkaNodeRecord,
  type Infra,
  type InfraOptions,
} from './infra.js';
export {
  startKafkaBroker,
  startKafkaCluster,
  ensureKafkaJars,
  brokerAnswers,
  replicationOf,
  DEFAULT_KAFKA_VERSION,
  type KafkaNodeAddress,
  type BrokerSecurity,
  type ScramUser,
} from './kafka-broker.js';
export { createDatabase, startPostgres, findPostgresBin } from './postgres.js';
export { checkJava } from './java.js';
export { repoRoot, runDir, cacheDir } from './paths.js';
export { freePort, canConnect, isAlive, spawnDaemon, stopProcess, waitUntil } from './processes.js';
