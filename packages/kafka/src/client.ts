import './kafkajs-fixes.js';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import kafkajs, {
  type ISocketFactory,
  type Kafka,
  type KafkaConfig,
  type LogEntry,
  type SASLOptions,
} from 'kafkajs';

const { logLevel } = kafkajs;
import type { Logger } from '@mds/logging';

export interface KafkaSettings {
  brokers: string[];
  clientId: string;
  ssl?: boolean;
  sasl?: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string };
  /** Prefix of every topic and consumer group name. */
  topicPrefix?: string;
  replicationFactor?: number;
  historyRetentionDays?: number;
}

/** Maps the validated KAFKA_* environment (see @mds/config kafkaEnv) to client settings. */
export function kafkaSettingsFromEnv(
  config: {
    KAFKA_BROKERS: string[];
    KAFKA_CLIENT_ID?: string | undefined;
    KAFKA_SSL: boolean;
    KAFKA_SASL_MECHANISM?: 'plain' | 'scram-sha-256' | 'scram-sha-512' | undefined;
    KAFKA_SASL_USERNAME?: string | undefined;
    KAFKA_SASL_PASSWORD?: string | undefined;
    KAFKA_TOPIC_PREFIX: string;
    KAFKA_REPLICATION_FACTOR: number;
    MDS_HISTORY_RETENTION_DAYS: number;
  },
  defaultClientId: string,
): KafkaSettings {
  return {
    brokers: config.KAFKA_BROKERS,
    clientId: config.KAFKA_CLIENT_ID ?? defaultClientId,
    ssl: config.KAFKA_SSL,
    ...(config.KAFKA_SASL_MECHANISM
      ? {
          sasl: {
            mechanism: config.KAFKA_SASL_MECHANISM,
            username: config.KAFKA_SASL_USERNAME ?? '',
            password: config.KAFKA_SASL_PASSWORD ?? '',
          },
        }
      : {}),
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    replicationFactor: config.KAFKA_REPLICATION_FACTOR,
    historyRetentionDays: config.MDS_HISTORY_RETENTION_DAYS,
  };
}

const levels: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** kafkajs logs through our pino logger, at warn and above unless the logger asks for more. */
function logCreator(logger: Logger) {
  return () =>
    ({ namespace, level, log }: LogEntry) => {
      const { message, timestamp: _timestamp, logger: _name, ...extra } = log;
      const as = message.includes(CUT_SHORT) ? 'debug' : (levels[level] ?? 'info');
      logger[as]({ kafkajs: namespace, ...extra }, message);
    };
}

export function createKafkaClient(settings: KafkaSettings, logger: Logger): Kafka {
  const config: KafkaConfig = {
    clientId: settings.clientId,
    brokers: settings.brokers,
    ssl: settings.ssl ?? false,
    logLevel: logger.isLevelEnabled('debug') ? logLevel.DEBUG : logLevel.WARN,
    logCreator: logCreator(logger.child({ component: 'kafkajs' })),
    connectionTimeout: 3_000,
    requestTimeout: 30_000,
  };
  if (settings.sasl) config.sasl = settings.sasl as SASLOptions;
  const kafka = new kafkajs.Kafka(config);
  configs.set(kafka, config);
  return kafka;
}

/** Why clientWithOwnSockets closed a connection: kafkajs logs it as a connection error, which it is not. */
const CUT_SHORT = 'closed by a consumer that stops';

/** The settings each client of createKafkaClient was made with. */
const configs = new WeakMap<Kafka, KafkaConfig>();
/** kafkajs's own way of opening a broker connection (TCP or TLS, with keep-alive). */
const kafkajsSocket = (
  createRequire(createRequire(import.meta.url).resolve('kafkajs'))(
    './src/network/socketFactory.js',
  ) as () => ISocketFactory
)();

/**
 * A client with the settings of `kafka` (one createKafkaClient made) whose open connections `closeSockets`
 * ends: a consumer's long idle fetch, which the broker holds until a record comes or the wait ends,
 * is then cut short (kafkajs, stopping, otherwise waits for it). Undefined for a client made elsewhere.
 */
export function clientWithOwnSockets(kafka: Kafka): { kafka: Kafka; closeSockets: () => void } | undefined {
  const config = configs.get(kafka);
  if (!config) return undefined;
  const sockets = new Set<Socket>();
  const socketFactory: ISocketFactory = (args) => {
    const socket = kafkajsSocket(args);
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    return socket;
  };
  return {
    kafka: new kafkajs.Kafka({ ...config, socketFactory }),
    // Closed with an error, which kafkajs hears (it fails what was in flight on the connection at once); a
    // half-close would not do: the broker answers a held fetch before it closes its end.
    closeSockets: () => {
      for (const socket of sockets) socket.destroy(new Error(CUT_SHORT));
    },
  };
}
