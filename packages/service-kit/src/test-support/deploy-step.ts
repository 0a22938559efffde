// The contract every service's deploy step (dist/deploy-step.js, the Helm hook Job) keeps, as one suite
// each service runs with its own schema, migrations and topics.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { loadConfig, type z } from '@mds/config';
import type { TopicSpec } from '@mds/contracts';
import { openDatabase, type Migration } from '@mds/db';
import { createKafkaClient, topicName } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { createTestDatabase, testInfra, uniqueName } from '@mds/local-infra/testing';
import { runDeployStep, type DeployStepConfig, type ServiceDeployment } from '../platform/deployment.js';

/** What the deploy step must have made, as the service's own modules name it. */
export interface DeployStepExpectations {
  schema: string;
  migrations: readonly Migration[];
  topics: readonly TopicSpec[];
  /** Settings the service's deploy step needs besides Kafka and PostgreSQL (a sender's MESSENGER). */
  env?: Record<string, string>;
}

/**
 * The suite, for the service in `serviceDir` (the step runs there as `src/deploy-step.ts`) with its deploy-step
 * configuration and its declaration, which the deploy step and every replica's start-up provision.
 */
export function deployStepContract<S extends z.ZodObject>(
  serviceDir: string,
  configSchema: S,
  deployment: ServiceDeployment,
  expected: DeployStepExpectations,
): void {
  const o = { serviceDir, configSchema, deployment, ...expected };
  const logger = createLogger({ service: 'deploy-step-test', level: 'silent' });
  const deployStep = (config: z.infer<S>) =>
    runDeployStep(o.deployment, config as unknown as DeployStepConfig, logger);

  async function environment(): Promise<Record<string, string>> {
    return {
      KAFKA_BROKERS: testInfra().kafkaBrokers.join(','),
      KAFKA_TOPIC_PREFIX: `${uniqueName('deploy')}.`,
      DATABASE_URL: await createTestDatabase('deploy'),
      LOG_LEVEL: 'info',
      ...o.env,
    };
  }

  /** Runs src/deploy-step.ts as its own process, as the Helm hook Job runs dist/deploy-step.js. */
  function runProcess(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
    const child = spawn(
      process.execPath,
      ['--conditions=@mds/source', '--import', 'tsx', 'src/deploy-step.ts'],
      {
        cwd: o.serviceDir,
        env: { PATH: process.env.PATH ?? '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
  }

  describe('the deploy step', () => {
    it('migrates and provisions once, when run twice at once and again later', async () => {
      const env = await environment();
      const config = loadConfig(o.configSchema, env);
      const [first, second] = await Promise.all([deployStep(config), deployStep(config)]);
      // One of the two applied every migration; the other found them applied.
      expect([...first.migrations, ...second.migrations].sort()).toEqual(
        o.migrations.map((m) => m.name).sort(),
      );
      expect((await deployStep(config)).migrations).toEqual([]);

      const db = await openDatabase({ url: env.DATABASE_URL!, schema: o.schema });
      try {
        const applied = await db('knex_migrations').withSchema(o.schema).pluck('name');
        expect(applied.sort()).toEqual(o.migrations.map((m) => m.name).sort());
        // Every consumer group of every service sets aside what it cannot handle in this table.
        expect(await db.schema.withSchema(o.schema).hasTable('dead_letters')).toBe(true);
      } finally {
        await db.destroy();
      }
      const admin = createKafkaClient(
        { brokers: testInfra().kafkaBrokers, clientId: 'deploy-step-test' },
        logger,
      ).admin();
      await admin.connect();
      try {
        const names = o.topics.map((t) => topicName(t, env.KAFKA_TOPIC_PREFIX));
        const metadata = await admin.fetchTopicMetadata({ topics: names });
        for (const spec of o.topics) {
          const topic = metadata.topics.find((t) => t.name === topicName(spec, env.KAFKA_TOPIC_PREFIX));
          expect(topic?.partitions).toHaveLength(spec.partitions);
        }
      } finally {
        await admin.disconnect();
      }
    });

    it('runs as a process that exits 0 when done and 1 with the reason when it cannot', async () => {
      const env = await environment();
      const done = await runProcess(env);
      expect(done.output).toContain('deploy step done');
      expect(done.code).toBe(0);

      const misconfigured = await runProcess({ ...env, DATABASE_URL: 'mysql://nope' });
      expect(misconfigured.code).toBe(1);
      expect(misconfigured.output).toContain('DATABASE_URL');

      const unreachable = await runProcess({ ...env, DATABASE_URL: 'postgres://nobody:x@127.0.0.1:1/none' });
      expect(unreachable.code).toBe(1);
      expect(unreachable.output).toContain('deploy step failed');
    });
  });
}
