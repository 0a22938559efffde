import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDir } from './paths.js';
import { isAlive } from './processes.js';
import { startInfra, stopInfra } from './infra.js';
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

  it('uses KAFKA_BROKERS and DATABASE_URL when set, starting nothing', async () => {
    const infra = await startInfra({
      name: uniqueName('infra-test'),
      env: { ...process.env, KAFKA_BROKERS: '10.0.0.1:9092', DATABASE_URL: 'postgres://u@db/x' },
    });
    expect(infra).toMatchObject({
      kafkaBrokers: '10.0.0.1:9092',
      databaseUrl: 'postgres://u@db/x',
      startedHere: { kafka: false, postgres: false },
    });
  });

  it('refuses an unknown MDS_INFRA mode', async () => {
    await expect(
      startInfra({ name: uniqueName('infra-test'), env: { ...local, MDS_INFRA: 'docker' } }),
    ).rejects.toThrow(/MDS_INFRA must be/);
  });
});
