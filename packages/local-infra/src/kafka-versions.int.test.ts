import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { kafkaNodes } from './infra-kafka.js';
import { startInfra, stopInfra } from './infra.js';
import { DEFAULT_KAFKA_VERSION, KAFKA_3_VERSION } from './kafka-broker.js';
import { runDir } from './paths.js';
import { isAlive } from './processes.js';
import { uniqueName } from './testing.js';

// A run folder made by one Kafka line and started with another: refused at once, before a JVM starts, with
// both ways out; and a broker that cannot start at all fails at once too, not at the end of the timeout.
// Kafka only: PostgreSQL has nothing to do with it.
const local = {
  ...process.env,
  KAFKA_BROKERS: '',
  DATABASE_URL: 'postgres://unused@127.0.0.1:1/x',
  MDS_INFRA: 'local',
};
const withKafka = (version: string) => ({ ...local, MDS_KAFKA_VERSION: version });

/** Starts the run's Kafka with `version`, then stops it, keeping the data. */
async function makeData(name: string, version: string): Promise<void> {
  const infra = await startInfra({ name, env: withKafka(version) });
  expect(infra.kafkaVersion).toBe(version);
  await infra.stop();
}

async function refusal(name: string, version: string): Promise<{ message: string; ms: number }> {
  const began = Date.now();
  const error = await startInfra({ name, env: withKafka(version) }).then(
    async (infra) => {
      await infra.stop();
      return new Error(`Kafka ${version} started`);
    },
    (e: unknown) => e as Error,
  );
  return { message: error.message, ms: Date.now() - began };
}

describe('a run folder and the Kafka version that made it', () => {
  it(`made by ${DEFAULT_KAFKA_VERSION} and started with ${KAFKA_3_VERSION}: refused at once, with the fixes; a broker that cannot read it fails at once`, async () => {
    const name = uniqueName('versions');
    try {
      await makeData(name, DEFAULT_KAFKA_VERSION);
      const node = join(runDir(name), 'kafka');
      expect(readFileSync(join(node, 'made-by-kafka-version'), 'utf8').trim()).toBe(DEFAULT_KAFKA_VERSION);

      const refused = await refusal(name, KAFKA_3_VERSION);
      expect(refused.message).toContain(
        `made by Apache Kafka ${DEFAULT_KAFKA_VERSION}, and this start asks for Apache Kafka ${KAFKA_3_VERSION}`,
      );
      expect(refused.message).toContain(`MDS_KAFKA_VERSION=${DEFAULT_KAFKA_VERSION}`);
      expect(refused.message).toContain(`remove ${runDir(name)}`);
      expect(refused.ms).toBeLessThan(5_000); // no JVM was started: nothing to wait for

      // Data formatted before the version was recorded: told by the version its first start logged.
      rmSync(join(node, 'made-by-kafka-version'));
      expect((await refusal(name, KAFKA_3_VERSION)).message).toContain(
        `made by Apache Kafka ${DEFAULT_KAFKA_VERSION}`,
      );

      // Nothing tells (the log gone too): the 3.9 broker starts, cannot read 4.x metadata, and ends itself.
      rmSync(join(node, 'broker.log'));
      const crashed = await refusal(name, KAFKA_3_VERSION);
      expect(crashed.message).toMatch(/exited while starting/);
      expect(crashed.message).toMatch(/UnsupportedVersionException|MetadataParseException/);
      expect(crashed.message).toContain('was the data made by a newer Kafka?');
      expect(crashed.ms).toBeLessThan(50_000); // well before the 60 s readiness timeout
      expect(kafkaNodes(name, local).every((n) => !isAlive(n.pid))).toBe(true);
    } finally {
      await stopInfra(name, { env: local, removeData: true });
    }
    expect(existsSync(runDir(name))).toBe(false);
  });

  it(`made by ${KAFKA_3_VERSION} and started with ${DEFAULT_KAFKA_VERSION}: refused at once; started with the version that made it, it runs`, async () => {
    const name = uniqueName('versions');
    try {
      await makeData(name, KAFKA_3_VERSION);
      const refused = await refusal(name, DEFAULT_KAFKA_VERSION);
      expect(refused.message).toContain(
        `made by Apache Kafka ${KAFKA_3_VERSION}, and this start asks for Apache Kafka ${DEFAULT_KAFKA_VERSION}`,
      );
      expect(refused.message).toContain(`MDS_KAFKA_VERSION=${KAFKA_3_VERSION}`);
      expect(refused.ms).toBeLessThan(5_000);

      const again = await startInfra({ name, env: withKafka(KAFKA_3_VERSION) });
      try {
        expect(again.kafkaVersion).toBe(KAFKA_3_VERSION);
        // While it runs, a start asking for another line is refused too, not handed the running one.
        await expect(startInfra({ name, env: withKafka(DEFAULT_KAFKA_VERSION) })).rejects.toThrow(
          `has Apache Kafka ${KAFKA_3_VERSION} running, and this start asks for ${DEFAULT_KAFKA_VERSION}`,
        );
      } finally {
        await again.stop();
      }
    } finally {
      await stopInfra(name, { env: local, removeData: true });
    }
  });
});
