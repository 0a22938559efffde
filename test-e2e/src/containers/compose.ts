import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_KAFKA_VERSION, ensureKafkaJars, freePort, repoRoot } from '@mds/local-infra';
import { podman, podmanEnv } from './pod.js';

const run = promisify(execFile);

/**
 * The infrastructure images compose.yaml names (apache/kafka, postgres) cannot be pulled here: stand-ins built
 * from Apache Kafka's jars and Debian's PostgreSQL, configured the same way (see compose/*.Dockerfile).
 * Built on the services' base image (Debian trixie with Node); cached by podman's layers.
 */
export async function buildInfraStandIns(base: string): Promise<{ kafka: string; postgres: string }> {
  const env = await podmanEnv();
  const context = mkdtempSync(join(tmpdir(), 'mds-compose-infra-'));
  try {
    cpSync(join(import.meta.dirname, 'compose'), context, { recursive: true });
    cpSync(ensureKafkaJars(DEFAULT_KAFKA_VERSION), join(context, 'lib'), { recursive: true });
    const images = {
      kafka: `localhost/mds-test/kafka:${DEFAULT_KAFKA_VERSION}`,
      postgres: 'localhost/mds-test/postgres:trixie',
    };
    for (const [name, image] of Object.entries(images)) {
      await podman(
        env,
        [
          'build',
          '--format',
          'docker',
          '-q',
          '-f',
          join(context, `${name}.Dockerfile`),
          '--build-arg',
          `BASE=${base}`,
          '-t',
          image,
          context,
        ],
        900_000,
      );
    }
    return images;
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

/** compose.yaml run by podman-compose, on free loopback ports, under a project name of its own. */
export class ComposeStack {
  private constructor(
    readonly project: string,
    readonly ports: { gateway: number; simulator: number; registry: number; dispatcher: number },
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  static async up(o: { project: string; tag: string; kafkaImage: string; postgresImage: string }) {
    const ports = {
      gateway: await freePort(),
      simulator: await freePort(),
      registry: await freePort(),
      dispatcher: await freePort(),
    };
    const env: NodeJS.ProcessEnv = {
      ...(await podmanEnv()),
      MDS_TAG: o.tag,
      MDS_KAFKA_IMAGE: o.kafkaImage,
      MDS_POSTGRES_IMAGE: o.postgresImage,
      MDS_GATEWAY_PORT: String(ports.gateway),
      MDS_SIMULATOR_PORT: String(ports.simulator),
      MDS_REGISTRY_PORT: String(ports.registry),
      MDS_DISPATCHER_PORT: String(ports.dispatcher),
    };
    const stack = new ComposeStack(o.project, ports, env);
    await stack.compose(['up', '-d']);
    return stack;
  }

  async compose(args: string[], timeoutMs = 600_000): Promise<string> {
    try {
      const { stdout } = await run(
        'podman-compose',
        ['-p', this.project, '-f', join(repoRoot(), 'compose.yaml'), ...args],
        { cwd: repoRoot(), env: this.env, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024 },
      );
      return stdout;
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`podman-compose ${args.join(' ')} failed:\n${stdout ?? ''}\n${stderr ?? ''}`, {
        cause: error,
      });
    }
  }

  container(service: string): string {
    return `${this.project}_${service}_1`;
  }

  /** Waits for a one-shot service to end; answers its exit code and output. */
  async waitFor(service: string, timeoutMs: number): Promise<{ exitCode: number; logs: string }> {
    const env = this.env;
    const { stdout } = await podman(env, ['wait', this.container(service)], timeoutMs);
    return { exitCode: Number(stdout.trim()), logs: await this.logs(service) };
  }

  async logs(service: string): Promise<string> {
    const { stdout, stderr } = await podman(this.env, ['logs', this.container(service)]);
    return stdout + stderr;
  }

  /** Runs a shell script (the README's quick start), answering its output. */
  async shell(script: string): Promise<string> {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`the quick start failed (exit ${code}):\n${output}`);
    return output;
  }

  /** Stops everything (SIGTERM, then the engine's timeout) and removes the containers and the network. */
  async down(): Promise<void> {
    try {
      await this.compose(['down'], 300_000);
    } finally {
      // podman-compose 1.0.3 leaves its network, and at times a container, behind.
      await ComposeStack.removeLeftovers(this.project);
    }
  }

  /** Removes the project's containers and network, whatever stopped them (or did not: a killed run). */
  static async removeLeftovers(project: string): Promise<void> {
    const env = await podmanEnv();
    const { stdout } = await podman(env, [
      'ps',
      '-a',
      '-q',
      '--filter',
      `label=io.podman.compose.project=${project}`,
    ]);
    const left = stdout.split('\n').filter(Boolean);
    if (left.length > 0) await podman(env, ['rm', '-f', ...left], 180_000);
    await podman(env, ['network', 'rm', '--force', `${project}_default`]).catch(() => undefined);
  }
}

/** The quick start's shell steps as the README gives them (the first fenced block after "## Quick start" with curl). */
export function readmeQuickStart(): string {
  const readme = readFileSync(join(repoRoot(), 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start'));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const steps = blocks.find((b) => b.includes('curl'));
  if (!steps) throw new Error('no quick start steps in README.md');
  return steps;
}
