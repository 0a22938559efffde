import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaEnv, loadConfig, requireSasl, z } from '@mds/config';
import { topics } from '@mds/contracts';
import { DEFAULT_KAFKA_VERSION, freePort, startKafkaBroker, stopProcess } from '@mds/local-infra';
import { createLogger } from '@mds/logging';
import { createKafkaClient, kafkaSettingsFromEnv } from './client.js';

// A broker with SASL/SCRAM and the StandardAuthorizer, the gateway's user with the ACLs the ownership table
// (topics.ts) gives it: its producer is refused a topic it does not own and allowed its own.

const { AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } = kafkajs;
const logger = createLogger({ service: 'kafka-acl-test', level: 'silent' });
const admin = { name: 'admin', password: randomBytes(12).toString('hex') };
const gateway = { name: 'gateway', password: randomBytes(12).toString('hex') };
const dir = mkdtempSync(join(tmpdir(), 'mds-kafka-acl-'));
let brokers = '';
let pid = 0;

/** A client configured the way a service is: KAFKA_* settings, the password from a file (a mounted Secret). */
function serviceKafka(user: { name: string; password: string }) {
  const passwordFile = join(dir, `${user.name}.password`);
  writeFileSync(passwordFile, `${user.password}\n`);
  const config = loadConfig(z.object(kafkaEnv).superRefine(requireSasl), {
    KAFKA_BROKERS: brokers,
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: user.name,
    KAFKA_SASL_PASSWORD_FILE: passwordFile,
  });
  return createKafkaClient(kafkaSettingsFromEnv(config, user.name), logger);
}

/** Topics the gateway writes by the ownership table: those with an event type it owns. */
const gatewayWrites = Object.values(topics)
  .filter((t) => Object.values(t.owners).some((owner) => /(^|[^a-z-])gateway($|[^a-z-])/.test(owner)))
  .map((t) => t.name);

beforeAll(async () => {
  const [port, controllerPort] = [await freePort(), await freePort()];
  const started = await startKafkaBroker({
    version: DEFAULT_KAFKA_VERSION,
    dir,
    port,
    controllerPort,
    heapMb: 256,
    security: { admin, users: [gateway] },
  });
  pid = started.pid;
  brokers = started.brokers;
  const client = serviceKafka(admin).admin();
  await client.connect();
  try {
    await client.createTopics({
      waitForLeaders: true,
      topics: [topics.account.name, topics.message.name].map((topic) => ({ topic, numPartitions: 1 })),
    });
    await client.createAcls({
      acl: gatewayWrites.flatMap((name) =>
        [AclOperationTypes.WRITE, AclOperationTypes.DESCRIBE].map((operation) => ({
          resourceType: AclResourceTypes.TOPIC,
          resourceName: name,
          resourcePatternType: ResourcePatternTypes.LITERAL,
          principal: `User:${gateway.name}`,
          host: '*',
          operation,
          permissionType: AclPermissionTypes.ALLOW,
        })),
      ),
    });
  } finally {
    await client.disconnect();
  }
}, 120_000);

afterAll(async () => {
  if (pid) await stopProcess(pid, 10_000);
  rmSync(dir, { recursive: true, force: true });
});

describe('a broker with SASL/SCRAM and ACLs', () => {
  it('owns what the table says: the gateway writes mds.message.v1 and mds.client-request.v1 only', () => {
    expect(gatewayWrites.sort()).toEqual(['mds.client-request.v1', 'mds.message.v1']);
  });

  it("refuses the gateway's producer on mds.account.v1 (TOPIC_AUTHORIZATION_FAILED) and takes its own topic", async () => {
    const producer = serviceKafka(gateway).producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      await expect(
        producer.send({
          topic: topics.message.name,
          acks: -1,
          messages: [{ key: 'm-1', value: 'accepted' }],
        }),
      ).resolves.toHaveLength(1);
      const refused: unknown = await producer
        .send({ topic: topics.account.name, acks: -1, messages: [{ key: 'c-1', value: 'forged' }] })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(Error);
      // kafkajs wraps the broker's answer (after its retries) in a non-retriable error: the cause says why.
      const cause = (refused as { cause?: { type?: string } }).cause;
      expect((refused as { type?: string }).type ?? cause?.type).toBe('TOPIC_AUTHORIZATION_FAILED');
    } finally {
      await producer.disconnect();
    }
  }, 60_000);

  it('refuses a client with a wrong password, and one without SASL', async () => {
    const wrong = serviceKafka({ name: gateway.name, password: 'not-the-password' }).producer();
    await expect(wrong.connect()).rejects.toThrow(
      /SASL SCRAM SHA512 authentication failed|Authentication failed/i,
    );
    const plain = new kafkajs.Kafka({
      brokers: [brokers],
      clientId: 'plain',
      logLevel: kafkajs.logLevel.NOTHING,
      retry: { retries: 0 },
      connectionTimeout: 1_000,
      requestTimeout: 2_000,
    }).admin();
    await expect(plain.connect().then(() => plain.listTopics())).rejects.toThrow();
    await plain.disconnect().catch(() => undefined);
  }, 60_000);
});
