import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaEnv, loadConfig, requireSasl, z } from '@mds/config';
import { topics, allTopics } from '@mds/contracts';
import { DEFAULT_KAFKA_VERSION, freePort, startKafkaBroker, stopProcess } from '@mds/local-infra';
import { createLogger } from '@mds/logging';
import { createKafkaClient, kafkaSettingsFromEnv } from './client.js';
import { provisionTopics } from './topics.js';

// A broker with SASL/SCRAM and the StandardAuthorizer, with users as the chart makes them (deploy/chart,
// kafkauser.yaml): a running service's user may only use its own topics (Write and Describe on those it owns,
// Read and Describe on those it reads, its consumer groups); its deploy step's user creates and configures
// them and nothing else. The gateway's producer is refused a topic it does not own; the dashboard, a reader,
// may neither create a topic nor change one's settings (retention.ms=1 on mds.client.v1 would empty it), and
// still starts when its topics exist.

const { AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } = kafkajs;
const logger = createLogger({ service: 'kafka-acl-test', level: 'silent' });
const admin = { name: 'admin', password: randomBytes(12).toString('hex') };
const gateway = { name: 'gateway', password: randomBytes(12).toString('hex') };
const dashboard = { name: 'dashboard', password: randomBytes(12).toString('hex') };
const dashboardDeploy = { name: 'dashboard-deploy', password: randomBytes(12).toString('hex') };
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
const gatewayWrites = allTopics()
  .filter((t) => Object.values(t.owners).some((owner) => /(^|[^a-z-])gateway($|[^a-z-])/.test(owner)))
  .map((t) => t.name);
/** The topics the dashboard reads (and its deploy step provisions). */
const dashboardTopics = allTopics().filter((t) => t.readers.includes('dashboard'));

type Operation = (typeof AclOperationTypes)[keyof typeof AclOperationTypes];
const allow = (
  user: string,
  resourceType: number,
  resourceName: string,
  operation: Operation,
  prefixed = false,
) => ({
  resourceType,
  resourceName,
  resourcePatternType: prefixed ? ResourcePatternTypes.PREFIXED : ResourcePatternTypes.LITERAL,
  principal: `User:${user}`,
  host: '*',
  operation,
  permissionType: AclPermissionTypes.ALLOW,
});

/** The error type kafkajs reports: the error's, its cause's (after its retries), or the first of an aggregate's. */
const typeOf = (error: unknown) => {
  const e = error as { type?: string; cause?: { type?: string }; errors?: { type?: string }[] };
  return e.type ?? e.cause?.type ?? e.errors?.[0]?.type;
};

beforeAll(async () => {
  const [port, controllerPort] = [await freePort(), await freePort()];
  const started = await startKafkaBroker({
    version: DEFAULT_KAFKA_VERSION,
    dir,
    port,
    controllerPort,
    heapMb: 256,
    security: { admin, users: [gateway, dashboard, dashboardDeploy] },
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
    const { TOPIC, GROUP } = AclResourceTypes;
    const { WRITE, READ, DESCRIBE, CREATE, ALTER_CONFIGS } = AclOperationTypes;
    await client.createAcls({
      acl: [
        ...gatewayWrites.flatMap((name) =>
          [WRITE, DESCRIBE].map((op) => allow(gateway.name, TOPIC, name, op)),
        ),
        // The dashboard's service user: Read and Describe on what it reads, its groups.
        ...dashboardTopics.flatMap((t) =>
          [READ, DESCRIBE].map((op) => allow(dashboard.name, TOPIC, t.name, op)),
        ),
        ...[READ, DESCRIBE].map((op) => allow(dashboard.name, GROUP, dashboard.name, op, true)),
        // Its deploy step's user: Create, AlterConfigs and Describe on the same topics, nothing else.
        ...dashboardTopics.flatMap((t) =>
          [CREATE, DESCRIBE, ALTER_CONFIGS].map((op) => allow(dashboardDeploy.name, TOPIC, t.name, op)),
        ),
      ],
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
  it('owns what the table says: the gateway writes mds.message.v1, mds.client-request.v1 and its request log only', () => {
    expect(gatewayWrites.sort()).toEqual(['mds.api-requests.v1', 'mds.client-request.v1', 'mds.message.v1']);
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
      expect(typeOf(refused)).toBe('TOPIC_AUTHORIZATION_FAILED');
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

  it("refuses the dashboard's user AlterConfigs and CreateTopics on its own topics; its deploy user does both", async () => {
    const retention = [{ name: 'retention.ms', value: '1' }];
    const alter = (user: { name: string; password: string }) =>
      withAdmin(user, (a) =>
        a.alterConfigs({
          validateOnly: false,
          resources: [
            { type: kafkajs.ConfigResourceTypes.TOPIC, name: topics.client.name, configEntries: retention },
          ],
        }),
      );
    const create = (user: { name: string; password: string }) =>
      withAdmin(user, (a) => a.createTopics({ topics: [{ topic: topics.webhook.name, numPartitions: 1 }] }));
    const retentionOf = async (topic: string) =>
      (
        await withAdmin(admin, (a) =>
          a.describeConfigs({
            includeSynonyms: false,
            resources: [
              { type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] },
            ],
          }),
        )
      ).resources[0]!.configEntries[0]!.configValue;
    // The running service may not create a topic it reads ...
    expect(typeOf(await create(dashboard).catch((e: unknown) => e))).toBe('TOPIC_AUTHORIZATION_FAILED');
    // ... its deploy step does, as it provisions: creates what is missing, configures what exists.
    await provisionTopics(serviceKafka(dashboardDeploy), dashboardTopics, {
      existing: 'configure',
      partitions: 1,
    });
    expect(await withAdmin(admin, (a) => a.listTopics())).toEqual(
      expect.arrayContaining(dashboardTopics.map((t) => t.name)),
    );
    // The running service may not change a setting: mds.client.v1 stays kept for ever (-1).
    expect(typeOf(await alter(dashboard).catch((e: unknown) => e))).toBe('TOPIC_AUTHORIZATION_FAILED');
    expect(await retentionOf(topics.client.name)).toBe('-1');
    // The deploy step may: a shorter history reaches the existing mds.message.v1.
    await provisionTopics(serviceKafka(dashboardDeploy), dashboardTopics, {
      existing: 'configure',
      partitions: 1,
      historyRetentionDays: 7,
    });
    expect(await retentionOf(topics.message.name)).toBe(String(7 * 86_400_000));
  }, 60_000);

  it('starts the dashboard without create rights once its topics exist (start-up leaves them as they are)', async () => {
    // The full provisioning, as start-up did before, is refused to the service's user ...
    const configure = await provisionTopics(serviceKafka(dashboard), dashboardTopics, {
      existing: 'configure',
      partitions: 1,
    }).catch((e: unknown) => e);
    expect(configure).toBeInstanceOf(Error);
    // ... what start-up does now needs no more than Describe.
    await expect(
      provisionTopics(serviceKafka(dashboard), dashboardTopics, { existing: 'leave', partitions: 1 }),
    ).resolves.toBeUndefined();
  }, 60_000);
});

/** Runs `fn` with an admin client logged in as `user`. */
async function withAdmin<T>(
  user: { name: string; password: string },
  fn: (admin: kafkajs.Admin) => Promise<T>,
): Promise<T> {
  const client = serviceKafka(user).admin();
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.disconnect();
  }
}
