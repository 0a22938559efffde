import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDatabase, freePort, replicationOf, repoRoot, startInfra, type Infra } from '@mds/local-infra';
import { FrontProcess } from './front.js';
import { RunningService } from './running-service.js';

/** How to run one service as a process. */
export interface ServiceDefinition {
  name: string;
  /** Program and arguments; by default the built service: node services/<name>/dist/main.js. */
  command?: string[];
  /** Its settings; a function gets every service's HTTP port, to point services at each other. */
  env?: Record<string, string> | ((ports: Record<string, number>) => Record<string, string>);
  /** Processes of this service: the stack's `replicas` unless said here (a service with state in memory: 1). */
  replicas?: number;
  /**
   * Variables that name further ports it listens on, besides HTTP_PORT (the registry's GRPC_PORT). With
   * several replicas each gets ports of its own, and the port `env` gives becomes the service's address.
   */
  listens?: string[];
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
  /**
   * Processes of every service (separate processes in the same consumer groups, on the same database):
   * 1 by default. With more, each service's address (its HTTP port, and the ports of `listens`) is a
   * `Front` balancing connections over its ready replicas, as a Kubernetes Service does.
   */
  replicas?: number;
  /**
   * Kafka brokers of the stack's own, started with it and stopped with it: with 3, a KRaft cluster, every
   * topic with 3 replicas and min ISR 2 (the services are given KAFKA_REPLICATION_FACTOR to match). The
   * run's broker by default. PostgreSQL stays the run's (DATABASE_URL) unless `infra` says otherwise.
   */
  brokers?: number;
}

/** How often a replicated service's front asks its replicas' /readyz (Kubernetes: every 5 s, out after 2 failures). */
const READINESS_PERIOD_MS = 1_000;

/** The replicas of one service and, when there are several, the fronts that balance over them. */
class ServiceGroup {
  replicas: RunningService[] = [];
  readonly ready = new WeakMap<RunningService, boolean>();
  readonly draining = new WeakSet<RunningService>();
  /** Replica processes made so far: numbers their logs. */
  private started = 0;
  private checking: ReturnType<typeof setInterval> | undefined;

  constructor(
    readonly definition: ServiceDefinition,
    /** The service's address: its HTTP port and the ports of `listens`, by variable. */
    readonly address: Record<string, number>,
    private readonly env: NodeJS.ProcessEnv,
    private readonly artifacts: string,
    readonly count: number,
    /** Where the service's fronts run (several replicas only). */
    private readonly fronts: FrontProcess | undefined,
  ) {}

  get balanced(): boolean {
    return this.count > 1;
  }

  /** A new replica process (not started): alone, on the service's own ports; else on fresh ones. */
  async newReplica(): Promise<RunningService> {
    const label = this.balanced ? `${this.definition.name}-${++this.started}` : this.definition.name;
    let ports = this.address;
    if (this.balanced) {
      ports = {};
      for (const variable of Object.keys(this.address)) ports[variable] = await freePort();
    }
    const env = { ...this.env, ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])) };
    return new RunningService(this.definition, label, ports, env, this.artifacts);
  }

  async start(): Promise<void> {
    this.replicas = await Promise.all(Array.from({ length: this.count }, () => this.newReplica()));
    if (this.fronts) {
      for (const port of Object.values(this.address)) await this.fronts.listen(port);
      this.tellFronts();
      this.checking = setInterval(() => void this.checkReadiness(), READINESS_PERIOD_MS);
    }
    // Together: each runs the service's migrations under its advisory lock, as pods of a Deployment do.
    await Promise.all(this.replicas.map((r) => this.startReplica(r)));
  }

  private async startReplica(replica: RunningService): Promise<void> {
    await replica.start();
    this.ready.set(replica, true);
    this.tellFronts();
  }

  private async checkReadiness(): Promise<void> {
    await Promise.all(
      this.replicas.map(async (r) => {
        this.ready.set(r, r.running && (await r.ready()));
      }),
    );
    this.tellFronts();
  }

  /** Gives the fronts the replicas as they are now: each front its variable's port of each. */
  private tellFronts(): void {
    if (!this.fronts) return;
    for (const [variable, port] of Object.entries(this.address)) {
      this.fronts.update(
        port,
        this.replicas.map((r) => ({
          port: r.ports[variable]!,
          ready: this.ready.get(r) ?? false,
          draining: this.draining.has(r),
        })),
      );
    }
  }

  /**
   * Replaces every replica, one at a time, as a Deployment's rolling update does with `maxSurge: 1` and
   * `maxUnavailable: 0`: a new process starts and must be ready before the old one leaves the front,
   * waits `drainMs` (the preStop sleep) and gets SIGTERM. Answers each old process's exit code.
   */
  async roll(drainMs: number): Promise<(number | null)[]> {
    const codes: (number | null)[] = [];
    for (const old of [...this.replicas]) {
      const fresh = await this.newReplica();
      await this.startReplica(fresh);
      this.replicas = this.replicas.map((r) => (r === old ? fresh : r));
      this.draining.add(old);
      this.tellFronts();
      await sleep(drainMs);
      codes.push(await old.stop());
    }
    return codes;
  }

  async stop(): Promise<void> {
    clearInterval(this.checking);
    for (const r of this.replicas) this.draining.add(r);
    this.tellFronts();
    await Promise.all(this.replicas.map((r) => r.stop()));
  }
}

/**
 * The infrastructure and a set of services as real processes, isolated from other stacks on the same
 * broker and server: its own topic prefix, its own database. With `replicas`, several processes of each
 * service behind one address each; with `brokers`, a Kafka cluster of its own.
 */
export class Stack {
  private constructor(
    readonly infra: Pick<Infra, 'kafkaBrokers' | 'databaseUrl'>,
    readonly topicPrefix: string,
    readonly databaseUrl: string,
    readonly artifacts: string,
    private readonly groups: Map<string, ServiceGroup>,
    private readonly fronts: FrontProcess,
    private readonly stopInfra: (() => Promise<void>) | undefined,
    /** The name of the infrastructure run the stack started (for `stopKafkaNode` and its kin). */
    readonly infraRun: string | undefined,
  ) {}

  static async start(o: StackOptions): Promise<Stack> {
    const id = randomUUID().replaceAll('-', '').slice(0, 10);
    let infra: Pick<Infra, 'kafkaBrokers' | 'databaseUrl'>;
    let stopInfra: (() => Promise<void>) | undefined;
    let infraRun: string | undefined;
    const ownKafka = o.brokers !== undefined && !o.infra;
    if (o.infra) {
      infra = { kafkaBrokers: o.infra.kafkaBrokers, databaseUrl: o.infra.databaseUrl };
    } else if (process.env.KAFKA_BROKERS && process.env.DATABASE_URL && !ownKafka) {
      infra = { kafkaBrokers: process.env.KAFKA_BROKERS, databaseUrl: process.env.DATABASE_URL };
    } else {
      infraRun = `e2e-${id}`;
      // Never containers here: a drill stops and starts the brokers by process id.
      const env = ownKafka ? { ...process.env, KAFKA_BROKERS: '', MDS_INFRA: 'local' } : process.env;
      const started = await startInfra({
        name: infraRun,
        ephemeral: true,
        env,
        ...(o.brokers ? { brokerCount: o.brokers } : {}),
      });
      infra = started;
      stopInfra = () => started.stop();
    }
    const topicPrefix = `e2e_${id}.`;
    const artifacts = join(repoRoot(), 'test-e2e', 'test-artifacts', `stack-${id}`);
    mkdirSync(artifacts, { recursive: true });
    let databaseUrl: string;
    try {
      databaseUrl = await createDatabase(infra.databaseUrl, `e2e_${id}`);
    } catch (error) {
      await stopInfra?.();
      throw error;
    }
    // The gateway's IDEMPOTENCY_FINGERPRINT_KEYS (a secret, required; the other services read no such
    // setting): one per stack, so that its replicas agree on every fingerprint.
    const fingerprintKeys = randomBytes(32).toString('base64url');
    const groups = new Map<string, ServiceGroup>();
    const fronts = new FrontProcess();
    const stack = new Stack(infra, topicPrefix, databaseUrl, artifacts, groups, fronts, stopInfra, infraRun);
    try {
      const ports: Record<string, number> = {};
      for (const definition of o.services) ports[definition.name] = await freePort();
      for (const definition of o.services) {
        const own = typeof definition.env === 'function' ? definition.env(ports) : definition.env;
        const env: NodeJS.ProcessEnv = {
          ...process.env,
          KAFKA_BROKERS: infra.kafkaBrokers,
          DATABASE_URL: databaseUrl,
          KAFKA_TOPIC_PREFIX: topicPrefix,
          HTTP_HOST: '127.0.0.1',
          IDEMPOTENCY_FINGERPRINT_KEYS: fingerprintKeys,
          LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'info',
          ...(ownKafka ? { KAFKA_REPLICATION_FACTOR: String(replicationOf(o.brokers!).factor) } : {}),
          ...o.env,
          ...own,
        };
        // Every service serves /readyz and /metrics on a port of its own, as the chart runs them.
        env.OPS_PORT ??= String(await freePort());
        const address: Record<string, number> = {
          HTTP_PORT: ports[definition.name]!,
          OPS_PORT: Number(env.OPS_PORT),
        };
        for (const variable of definition.listens ?? []) {
          const port = Number(env[variable]);
          if (!Number.isInteger(port) || port <= 0)
            throw new Error(`${definition.name} listens on ${variable}, but its env gives no port for it`);
          address[variable] = port;
        }
        const count = definition.replicas ?? o.replicas ?? 1;
        if (count > 1 && !fronts.running) fronts.start();
        const group = new ServiceGroup(
          definition,
          address,
          env,
          artifacts,
          count,
          count > 1 ? fronts : undefined,
        );
        groups.set(definition.name, group);
      }
      for (const group of groups.values()) await group.start();
    } catch (error) {
      await stack.stop();
      throw error;
    }
    return stack;
  }

  private group(name: string): ServiceGroup {
    const group = this.groups.get(name);
    if (!group) throw new Error(`no service "${name}" in this stack`);
    return group;
  }

  /** The service's process; with several replicas, the first. */
  service(name: string): RunningService {
    return this.group(name).replicas[0]!;
  }

  /** Every replica of the service, in order (a rolling restart replaces them in place). */
  replicas(name: string): readonly RunningService[] {
    return this.group(name).replicas;
  }

  /** Every process of every service, with the name of its service. */
  processes(): { service: string; replica: RunningService }[] {
    return [...this.groups.values()].flatMap((g) =>
      g.replicas.map((replica) => ({ service: g.definition.name, replica })),
    );
  }

  /** The service's address: its front when it has several replicas, the process itself otherwise. */
  url(name: string): string {
    return `http://127.0.0.1:${this.group(name).address.HTTP_PORT!}`;
  }

  /** A rolling restart of a replicated service, as Kubernetes does it (see ServiceGroup.roll). */
  rollingRestart(name: string, o: { drainMs?: number } = {}): Promise<(number | null)[]> {
    const group = this.group(name);
    if (!group.balanced) throw new Error(`${name} has one replica: a rolling restart needs several`);
    return group.roll(o.drainMs ?? 1_000);
  }

  /**
   * Stops every service with `signal` (SIGINT: a terminal's Ctrl-C), in reverse start order, then starts
   * them all again in order, on the same ports and settings.
   */
  async restart(signal: NodeJS.Signals): Promise<void> {
    const groups = [...this.groups.values()];
    for (const group of [...groups].reverse()) await Promise.all(group.replicas.map((r) => r.kill(signal)));
    for (const group of groups) await Promise.all(group.replicas.map((r) => r.start()));
  }

  /** Stops every service (SIGTERM, in reverse start order), then the infrastructure if the stack started it. */
  async stop(): Promise<void> {
    for (const group of [...this.groups.values()].reverse()) await group.stop();
    await this.fronts.stop();
    await this.stopInfra?.();
  }
}

/**
 * The messenger simulator and client-registry pointed at it: what every stack with bots needs. The
 * registry's gRPC listens on `grpcPort` (give it to the services that ask the registry).
 */
/**
 * The sender of one messenger as a process: the one sender build (services/sender) with MESSENGER set, named as
 * its deployment (the catalogue's `sender`: telegram-sender), so a test finds and restarts it by that name.
 */
export function senderService(
  messenger: { name: string; sender: string },
  env: (ports: Record<string, number>) => Record<string, string>,
  o: Omit<ServiceDefinition, 'name' | 'command' | 'env'> = {},
): ServiceDefinition {
  return {
    ...o,
    name: messenger.sender,
    command: [process.execPath, join(repoRoot(), 'services', 'sender', 'dist', 'main.js')],
    env: (ports) => ({ MESSENGER: messenger.name, ...env(ports) }),
  };
}

export function simulatorAndRegistry(o: { grpcPort: number; adminToken: string }): ServiceDefinition[] {
  return [
    // It keeps its people, chats and bots in memory, like the messengers it stands in for: one process.
    { name: 'messenger-simulator', replicas: 1 },
    {
      name: 'client-registry',
      listens: ['GRPC_PORT'],
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
