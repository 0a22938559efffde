import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { runDir } from './paths.js';
import { freePort, isAlive, stopProcess } from './processes.js';
import { removePostgresDataElsewhere, startPostgres } from './postgres.js';
import { kafkaNodes, restartKafka, startKafkaNode, stopKafkaNode } from './infra-kafka.js';
import { restartPostgres, startInfra, stopInfra } from './infra.js';
import { eventually, uniqueName } from './testing.js';
import { brokerAnswers, DEFAULT_KAFKA_VERSION } from './kafka-broker.js';

// These tests start a broker and a PostgreSQL of their own (beside the run's shared ones), because what
// they check is the starting and stopping itself.
const local = { ...process.env, KAFKA_BROKERS: '', DATABASE_URL: '', MDS_INFRA: 'local' };
/** For the cluster tests, which need no PostgreSQL: an address that is never asked. */
const clusterOnly = { ...local, DATABASE_URL: 'postgres://unused@127.0.0.1:1/x' };

/** The process ids a run recorded: its (single) Kafka node's and PostgreSQL's. */
function recorded(name: string): { kafka: { pid: number }; postgres: { pid: number } } {
  const state = JSON.parse(readFileSync(join(runDir(name), 'state.json'), 'utf8')) as {
    postgres: { pid: number };
  };
  return { kafka: { pid: kafkaNodes(name)[0]!.pid }, postgres: state.postgres };
}

describe('local infrastructure', () => {
  it('starts a real Kafka and PostgreSQL, reuses them when started twice, and stops only its own processes', async () => {
    const name = uniqueName('infra-test');
    const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const first = await startInfra({ name, env: local });
      expect(first.startedHere).toEqual({ kafka: true, postgres: true });
      expect(first.kafkaVersion).toBe(DEFAULT_KAFKA_VERSION);
      expect(first.postgresVersion).toMatch(/^\d+/);

      const second = await startInfra({ name, env: local });
      expect(second.startedHere).toEqual({ kafka: false, postgres: false });
      expect(second.kafkaBrokers).toBe(first.kafkaBrokers);
      expect(second.databaseUrl).toBe(first.databaseUrl);
      await second.stop(); // stops nothing: this call started nothing

      const state = recorded(name);
      expect(isAlive(state.kafka.pid) && isAlive(state.postgres.pid)).toBe(true);

      const stopped = await stopInfra(name, { removeData: true });
      expect(stopped).toEqual([`Kafka (pid ${state.kafka.pid})`, `PostgreSQL (pid ${state.postgres.pid})`]);
      expect(isAlive(state.kafka.pid)).toBe(false);
      expect(isAlive(state.postgres.pid)).toBe(false);
      expect(isAlive(bystander.pid!)).toBe(true);
      expect(existsSync(runDir(name))).toBe(false);
    } finally {
      bystander.kill();
      // Harmless when the test stopped them already; otherwise they would outlive a failed assertion.
      await stopInfra(name, { removeData: true });
    }
  });

  it('restarts the broker and PostgreSQL on the same addresses, data and heap, as new processes', async () => {
    const name = uniqueName('infra-test');
    const env = { ...local, MDS_KAFKA_HEAP_MB: '384' };
    const infra = await startInfra({ name, env, ephemeral: true });
    try {
      const before = recorded(name);
      const db = new pg.Client({ connectionString: infra.databaseUrl });
      await db.connect();
      await db.query(`create table kept (v text); insert into kept values ('before restart')`);
      await db.end();
      const kafka = new Kafka({ brokers: [infra.kafkaBrokers], logLevel: logLevel.NOTHING });
      const setup = kafka.admin();
      await setup.connect();
      await setup.createTopics({ topics: [{ topic: 'kept' }], waitForLeaders: true });
      await setup.disconnect();
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: 'kept', messages: [{ value: 'before restart' }] });
      await producer.disconnect();

      await restartPostgres(name, local);
      await restartKafka(name, local);

      const after = recorded(name);
      expect(after.postgres.pid).not.toBe(before.postgres.pid);
      expect(after.kafka.pid).not.toBe(before.kafka.pid);
      expect(isAlive(before.postgres.pid) || isAlive(before.kafka.pid)).toBe(false);
      // The heap it was started with, not the restarting caller's (or the default).
      expect(readFileSync(`/proc/${after.kafka.pid}/cmdline`, 'utf8').split('\0')).toContain('-Xmx384m');
      const again = new pg.Client({ connectionString: infra.databaseUrl });
      await again.connect();
      const rows = await again.query<{ v: string }>('select v from kept');
      await again.end();
      expect(rows.rows).toEqual([{ v: 'before restart' }]);
      const admin = kafka.admin();
      await admin.connect();
      const offsets = await admin.fetchTopicOffsets('kept');
      await admin.disconnect();
      expect(offsets.map((o) => o.high)).toEqual(['1']);
    } finally {
      await infra.stop();
    }
    expect(existsSync(runDir(name))).toBe(false);
  });

  it('refuses to restart what a run did not record', async () => {
    const name = uniqueName('infra-test');
    await expect(restartPostgres(name, local)).rejects.toThrow(/no PostgreSQL recorded/);
    await expect(restartKafka(name, local)).rejects.toThrow(/no Kafka broker recorded/);
  });

  it('uses KAFKA_BROKERS and DATABASE_URL when set, starting nothing and writing nothing', async () => {
    const name = uniqueName('infra-test');
    const infra = await startInfra({
      name,
      env: { ...process.env, KAFKA_BROKERS: '10.0.0.1:9092', DATABASE_URL: 'postgres://u@db/x' },
    });
    expect(infra).toMatchObject({
      kafkaBrokers: '10.0.0.1:9092',
      databaseUrl: 'postgres://u@db/x',
      startedHere: { kafka: false, postgres: false },
    });
    expect(existsSync(runDir(name))).toBe(false);
  });

  it.runIf(process.getuid?.() === 0)(
    'starts PostgreSQL as root from a clone in a folder only root may enter (its data kept where its user can reach it)',
    async () => {
      const clone = mkdtempSync(join(tmpdir(), 'clone-'));
      chmodSync(clone, 0o700);
      const dir = join(clone, '.run', 'test', 'postgres');
      let pid: number | undefined;
      try {
        const started = await startPostgres({ dir, port: await freePort(), database: 'mds', fast: true });
        pid = started.pid;
        const client = new pg.Client({ connectionString: started.databaseUrl });
        await client.connect();
        expect((await client.query<{ one: number }>('select 1 as one')).rows).toEqual([{ one: 1 }]);
        await client.end();
        const place = readFileSync(join(dir, 'data.location'), 'utf8');
        expect(existsSync(join(place, 'PG_VERSION'))).toBe(true);
      } finally {
        if (pid) await stopProcess(pid, 15_000, 'SIGINT');
        removePostgresDataElsewhere(dir);
        rmSync(clone, { recursive: true, force: true });
      }
    },
  );

  it('refuses an unknown MDS_INFRA mode', async () => {
    await expect(
      startInfra({ name: uniqueName('infra-test'), env: { ...local, MDS_INFRA: 'docker' } }),
    ).rejects.toThrow(/MDS_INFRA must be/);
  });

  // Three broker JVMs started at once, one killed, one stopped, one started again: minutes on a busy machine.
  it('starts a cluster of three brokers whose topics get 3 replicas and min ISR 2, which loses one broker and not two', async () => {
    const name = uniqueName('infra-test');
    const env = clusterOnly;
    let started = false;
    const starting = startInfra({ name, env, ephemeral: true, brokerCount: 3 }).finally(
      () => (started = true),
    );
    // The nodes are on record while they start, so that nothing outlives a start that is interrupted.
    const recordedEarly = await eventually('the nodes on record', () => {
      try {
        return { pids: kafkaNodes(name, env).map((n) => n.pid), whileStarting: !started };
      } catch {
        return undefined;
      }
    });
    const infra = await starting;
    expect(recordedEarly.whileStarting).toBe(true);
    const client = (retries: number) =>
      new Kafka({
        brokers: infra.kafkaBrokers.split(','),
        logLevel: logLevel.NOTHING,
        retry: { retries, maxRetryTime: 2_000 },
      });
    const kafka = client(30);
    // Its retries outlast a leader election; the impatient one's do not outlast a lost quorum.
    const producer = kafka.producer({ idempotent: true });
    const impatient = client(1).producer({ idempotent: true });
    const nodes = kafkaNodes(name, env);
    try {
      expect(infra.startedHere).toEqual({ kafka: true, postgres: false });
      expect(nodes.map((n) => n.pid)).toEqual(recordedEarly.pids);
      expect(await brokerAnswers(infra.kafkaBrokers)).toBe(true);
      expect(nodes.map((n) => n.nodeId)).toEqual([1, 2, 3]);
      expect(infra.kafkaBrokers.split(',')).toEqual(nodes.map((n) => n.address));
      for (const node of nodes) {
        expect(readFileSync(`/proc/${node.pid}/cmdline`, 'utf8').split('\0')).toContain('-Xmx256m');
      }
      // A topic created without settings takes the cluster's: three replicas, two in sync at least.
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({
        topics: [{ topic: 'replicated', numPartitions: 3 }],
        waitForLeaders: false,
      });
      const metadata = await eventually('leaders of every partition', async () => {
        const found = await admin.fetchTopicMetadata({ topics: ['replicated'] }).catch(() => undefined);
        return found?.topics[0]?.partitions.every((p) => p.leader >= 0) ? found : undefined;
      });
      expect(metadata.topics[0]!.partitions.map((p) => p.replicas.length)).toEqual([3, 3, 3]);
      // Every broker knows the new topic a moment later (until then, UNKNOWN_TOPIC_OR_PARTITION).
      const configs = await eventually('the topic config', () =>
        admin
          .describeConfigs({
            includeSynonyms: false,
            resources: [
              { type: ConfigResourceTypes.TOPIC, name: 'replicated', configNames: ['min.insync.replicas'] },
            ],
          })
          .catch(() => undefined),
      );
      expect(configs.resources[0]!.configEntries[0]!.configValue).toBe('2');
      await admin.disconnect();

      await producer.connect();
      await impatient.connect();
      const send = (value: string, by = producer) =>
        by.send({
          topic: 'replicated',
          acks: -1,
          timeout: 3_000,
          messages: [0, 1, 2].map((partition) => ({ partition, value })),
        });
      await send('three brokers');
      await stopKafkaNode(name, 1, { signal: 'SIGKILL', env });
      await send('two brokers'); // min ISR 2 still holds
      await stopKafkaNode(name, 2, { env });
      await expect(send('one broker', impatient)).rejects.toThrow();
      expect(kafkaNodes(name, env).map((n) => n.alive)).toEqual([false, false, true]);
      await startKafkaNode(name, 2, env);
      await expect(startKafkaNode(name, 2, env)).rejects.toThrow(/is running/);
      await send('two brokers again');
    } finally {
      await producer.disconnect().catch(() => undefined);
      await impatient.disconnect().catch(() => undefined);
      await infra.stop();
    }
    // Stopped by process id, the restarted node's new process included.
    expect(nodes.map((n) => isAlive(n.pid))).toEqual([false, false, false]);
    expect(existsSync(runDir(name))).toBe(false);
  }, 300_000);

  it("refuses a run's data to a Kafka of another size", async () => {
    const name = uniqueName('infra-test');
    const env = clusterOnly;
    const single = await startInfra({ name, env });
    await single.stop();
    try {
      await expect(startInfra({ name, env, brokerCount: 3 })).rejects.toThrow(
        /holds the data of a Kafka of one broker.*remove .* to start afresh with 3 broker/s,
      );
    } finally {
      await stopInfra(name, { env, removeData: true });
    }
  });
});
