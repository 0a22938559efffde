import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { runDir } from './paths.js';
import { freePort, isAlive, stopProcess } from './processes.js';
import { removePostgresDataElsewhere, startPostgres } from './postgres.js';
import { restartKafka, restartPostgres, startInfra, stopInfra } from './infra.js';
import { uniqueName } from './testing.js';

// These tests start a broker and a PostgreSQL of their own (beside the run's shared ones), because what
// they check is the starting and stopping itself.
const local = { ...process.env, KAFKA_BROKERS: '', DATABASE_URL: '', MDS_INFRA: 'local' };

describe('local infrastructure', () => {
  it('starts a real Kafka and PostgreSQL, reuses them when started twice, and stops only its own processes', async () => {
    const name = uniqueName('infra-test');
    const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const first = await startInfra({ name, env: local });
      expect(first.startedHere).toEqual({ kafka: true, postgres: true });
      expect(first.kafkaVersion).toBe('3.9.1');
      expect(first.postgresVersion).toMatch(/^\d+/);

      const second = await startInfra({ name, env: local });
      expect(second.startedHere).toEqual({ kafka: false, postgres: false });
      expect(second.kafkaBrokers).toBe(first.kafkaBrokers);
      expect(second.databaseUrl).toBe(first.databaseUrl);
      await second.stop(); // stops nothing: this call started nothing

      const state = JSON.parse(readFileSync(join(runDir(name), 'state.json'), 'utf8')) as {
        kafka: { pid: number };
        postgres: { pid: number };
      };
      expect(isAlive(state.kafka.pid) && isAlive(state.postgres.pid)).toBe(true);

      const stopped = await stopInfra(name, { removeData: true });
      expect(stopped).toEqual([`Kafka (pid ${state.kafka.pid})`, `PostgreSQL (pid ${state.postgres.pid})`]);
      expect(isAlive(state.kafka.pid)).toBe(false);
      expect(isAlive(state.postgres.pid)).toBe(false);
      expect(isAlive(bystander.pid!)).toBe(true);
      expect(existsSync(runDir(name))).toBe(false);
    } finally {
      bystander.kill();
    }
  });

  it('restarts the broker and PostgreSQL on the same addresses, data and heap, as new processes', async () => {
    const name = uniqueName('infra-test');
    const env = { ...local, MDS_KAFKA_HEAP_MB: '384' };
    const infra = await startInfra({ name, env, ephemeral: true });
    try {
      const recorded = () =>
        JSON.parse(readFileSync(join(runDir(name), 'state.json'), 'utf8')) as {
          kafka: { pid: number };
          postgres: { pid: number };
        };
      const before = recorded();
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

      const after = recorded();
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
});
