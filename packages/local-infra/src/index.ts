export {
  startInfra,
  stopInfra,
  restartKafka,
  restartPostgres,
  type Infra,
  type InfraOptions,
} from './infra.js';
export { startKafkaBroker, ensureKafkaJars, brokerAnswers, DEFAULT_KAFKA_VERSION } from './kafka-broker.js';
export { createDatabase, startPostgres, findPostgresBin } from './postgres.js';
export { checkJava } from './java.js';
export { repoRoot, runDir, cacheDir } from './paths.js';
export { freePort, canConnect, isAlive, spawnDaemon, stopProcess, waitUntil } from './processes.js';
