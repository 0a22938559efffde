import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createDatabase, freePort, repoRoot, startInfra, type Infra } from '@mds/local-infra';

/** How to run one service as a process. */
export interface ServiceDefinition {
  name: string;
  /** Program and arguments; by default the built service: node services/<name>/dist/main.js. */
  command?: string[];
  /** Its settings; a function gets every service's HTTP port, to point services at each other. */
  env?: Record<string, string> | ((ports: Record<string, number>) => Record<string, string>);
}

export interface StackOptions {
  services: ServiceDefinition[];
  /** Environment given to every service (after the stack's own settings). */
  env?: Record<string, string>;
  /**
   * A broker and a PostgreSQL server of the caller's (failure drills stop and restart their own); the
   * stack uses them and leaves stopping them to the caller. By default: KAFKA_BROKERS/DATABASE_URL, or
   * infrastructure the stack starts and stops.
   */
  infra?: Pick<Infra, 'kafkaBrokers' | 'databaseUrl'>;
}

const readyTimeoutMs = 60_000;

export class RunningService {
  private child: ChildProcess | undefined;
  private exitCode: Promise<number | null> = Promise.resolve(null);
  readonly logFile: string;

  constructor(
    readonly definition: ServiceDefinition,
    readonly port: number,
    private readonly env: NodeJS.ProcessEnv,
    artifacts: string,
  ) {
    this.logFile = join(artifacts, `${definition.name}.log`);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the process and waits until its /readyz answers 200. */
  async start(): Promise<void> {
    const [program, ...args] = this.definition.command ?? [
      process.execPath,
      join(repoRoot(), 'services', this.definition.name, 'dist', 'main.js'),
    ];
    const log = createWriteStream(this.logFile, { flags: 'a' });
    const child = spawn(program!, args, { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(log);
    child.stderr.pipe(log);
    this.child = child;
    this.exitCode = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (child.exitCode !== null) {
        throw new Error(
          `${this.definition.name} exited with ${child.exitCode} while starting; see ${this.logFile}`,
        );
      }
      if (await this.ready()) return;
      if (Date.now() > deadline)
        throw new Error(`${this.definition.name} was not ready in ${readyTimeoutMs} ms; see ${this.logFile}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async ready(): Promise<boolean> {
    try {
      return (await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(1_000) })).status === 200;
    } catch {
      return false;
    }
  }

  /** Sends a signal (SIGKILL by default: a crash) and waits for the process to end; returns its exit code. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return this.exitCode;
    this.child.kill(signal);
    return this.exitCode;
  }

  /** Graceful stop (SIGTERM), as Kubernetes does it. */
  stop(): Promise<number | null> {
    return this.kill('SIGTERM');
  }

  async restart(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    await this.kill(signal);
    await this.start();
  }
}

/**
 * The infrastructure and a set of services as real processes, isolated from other stacks on the same
 * broker and server: its own topic prefix, its own database.
 */
export class Stack {
  private constructor(
    readonly infra: Pick<Infra, 'kafkaBrokers' | 'databaseUrl'>,
    readonly topicPrefix: string,
    readonly databaseUrl: string,
    readonly artifacts: string,
    private readonly services: Map<string, RunningService>,
    private readonly stopInfra: (() => Promise<void>) | undefined,
  ) {}

  static async start(o: StackOptions): Promise<Stack> {
    let infra: Pick<Infra, 'kafkaBrokers' | 'databaseUrl'>;
    let stopInfra: (() => Promise<void>) | undefined;
    if (o.infra) {
      infra = { kafkaBrokers: o.infra.kafkaBrokers, databaseUrl: o.infra.databaseUrl };
    } else if (process.env.KAFKA_BROKERS && process.env.DATABASE_URL) {
      infra = { kafkaBrokers: process.env.KAFKA_BROKERS, databaseUrl: process.env.DATABASE_URL };
    } else {
      const started = await startInfra({ name: `e2e-${process.pid}`, ephemeral: true });
      infra = started;
      stopInfra = () => started.stop();
    }
    const id = randomUUID().replaceAll('-', '').slice(0, 10);
    const topicPrefix = `e2e_${id}.`;
    const databaseUrl = await createDatabase(infra.databaseUrl, `e2e_${id}`);
    const artifacts = join(repoRoot(), 'test-e2e', 'test-artifacts', `stack-${id}`);
    mkdirSync(artifacts, { recursive: true });
    const services = new Map<string, RunningService>();
    const ports: Record<string, number> = {};
    for (const definition of o.services) ports[definition.name] = await freePort();
    for (const definition of o.services) {
      const port = ports[definition.name]!;
      const own = typeof definition.env === 'function' ? definition.env(ports) : definition.env;
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        KAFKA_BROKERS: infra.kafkaBrokers,
        DATABASE_URL: databaseUrl,
        KAFKA_TOPIC_PREFIX: topicPrefix,
        HTTP_PORT: String(port),
        HTTP_HOST: '127.0.0.1',
        LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'info',
        ...o.env,
        ...own,
      };
      services.set(definition.name, new RunningService(definition, port, env, artifacts));
    }
    const stack = new Stack(infra, topicPrefix, databaseUrl, artifacts, services, stopInfra);
    try {
      for (const service of services.values()) await service.start();
    } catch (error) {
      await stack.stop();
      throw error;
    }
    return stack;
  }

  service(name: string): RunningService {
    const service = this.services.get(name);
    if (!service) throw new Error(`no service "${name}" in this stack`);
    return service;
  }

  /**
   * Stops every service with `signal` (SIGINT: a terminal's Ctrl-C), in reverse start order, then starts
   * them all again in order, on the same ports and settings.
   */
  async restart(signal: NodeJS.Signals): Promise<void> {
    const services = [...this.services.values()];
    for (const service of [...services].reverse()) await service.kill(signal);
    for (const service of services) await service.start();
  }

  /** Stops every service (SIGTERM, in reverse start order), then the infrastructure if the stack started it. */
  async stop(): Promise<void> {
    for (const service of [...this.services.values()].reverse()) await service.stop();
    await this.stopInfra?.();
  }
}

/**
 * The messenger simulator and client-registry pointed at it: what every stack with bots needs. The
 * registry's gRPC listens on `grpcPort` (give it to the services that ask the registry).
 */
export function simulatorAndRegistry(o: { grpcPort: number; adminToken: string }): ServiceDefinition[] {
  return [
    { name: 'messenger-simulator' },
    {
      name: 'client-registry',
      env: (ports) => ({
        GRPC_PORT: String(o.grpcPort),
        REGISTRY_ADMIN_TOKEN: o.adminToken,
        REGISTRY_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        TELEGRAM_API_ROOT: `http://127.0.0.1:${ports['messenger-simulator']}`,
        MAX_API_BASE: `http://127.0.0.1:${ports['messenger-simulator']}`,
      }),
    },
  ];
}
