import { execFile, spawn } from 'node:child_process';
import {
  chmodSync,
  createWriteStream,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, repoRoot } from '@mds/local-infra';
import type { ContainerSpec, Probe } from './chart.js';

const run = promisify(execFile);

/**
 * From inside a pod on slirp4netns with `allow_host_loopback`, this address is the host's loopback: where the
 * test's broker, PostgreSQL and webhook receivers listen.
 */
export const HOST_LOOPBACK = '10.0.2.2';

/** The label of every pod a test run makes, its value the run's image tag: a later run finds what a killed one left. */
const OWNER_LABEL = 'mds.containers-test';

/** Where a pod's Secret volumes are written on the host: a directory per pod, named after the owner's tag. */
const secretsPrefix = (owner: string) => `mds-secrets-${owner}-`;

/** The podman CLI with the environment `npm run image` uses (scripts/images/engine.mjs). */
export async function podmanEnv(): Promise<NodeJS.ProcessEnv> {
  const engine = (await import(join(repoRoot(), 'scripts', 'images', 'engine.mjs'))) as {
    engineEnv(engine: string): NodeJS.ProcessEnv;
  };
  return engine.engineEnv('podman');
}

export async function podman(env: NodeJS.ProcessEnv, args: string[], timeoutMs = 120_000) {
  try {
    return await run('podman', args, { env, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024 });
  } catch (error) {
    const { stderr, code } = error as { stderr?: string; code?: unknown };
    throw new Error(`podman ${args.join(' ')} failed (${String(code)}): ${stderr?.trim() ?? String(error)}`, {
      cause: error,
    });
  }
}

/** How a container ended: its exit code and how long the stop took. */
export interface Stopped {
  exitCode: number;
  seconds: number;
  gracePeriodSeconds: number;
}

/**
 * The services in one podman pod, as a Kubernetes namespace would hold their pods: every container gets the
 * rendered chart's settings; the services reach each other by their Service names (`client-registry:50051`,
 * resolved to the pod), and the test's broker and PostgreSQL through a forwarder that makes their loopback
 * addresses work inside the pod as they do on the host. Each container port is published on a free loopback
 * port of the host, which is where the test calls the APIs and the probes.
 */
export class ServicePod {
  private readonly published = new Map<string, number>();
  private readonly logs: string[] = [];

  private constructor(
    readonly name: string,
    private readonly env: NodeJS.ProcessEnv,
    readonly artifacts: string,
    private readonly secrets: string,
  ) {}

  /**
   * Creates the pod. `containerPorts` are every port any container will listen on (published now: a pod's ports
   * are fixed at creation); `serviceNames` resolve to the pod; `forward` are host loopback ports made reachable
   * at the same loopback port inside the pod (the broker advertises 127.0.0.1:<port>). `owner` (the run's image
   * tag) labels the pod and names its Secret directory, which `removeLeftovers(owner)` removes.
   */
  static async create(o: {
    name: string;
    owner: string;
    containerPorts: number[];
    serviceNames: string[];
    forward: number[];
    forwarderImage: string;
  }): Promise<ServicePod> {
    const env = await podmanEnv();
    const artifacts = join(repoRoot(), 'test-e2e', 'test-artifacts', o.name);
    mkdirSync(artifacts, { recursive: true });
    const secrets = mkdtempSync(join(tmpdir(), secretsPrefix(o.owner)));
    chmodSync(secrets, 0o755);
    const pod = new ServicePod(o.name, env, artifacts, secrets);
    const publish: string[] = [];
    for (const port of o.containerPorts) {
      const hostPort = await freePort();
      pod.published.set(String(port), hostPort);
      publish.push('-p', `127.0.0.1:${hostPort}:${port}`);
    }
    await podman(env, [
      'pod',
      'create',
      '--name',
      o.name,
      '--label',
      `${OWNER_LABEL}=${o.owner}`,
      '--network',
      'slirp4netns:allow_host_loopback=true',
      ...publish,
      ...o.serviceNames.flatMap((name) => ['--add-host', `${name}:127.0.0.1`]),
    ]);
    // The forwarder: a few lines of node in the pod, run from one of the images under test.
    await podman(env, [
      'run',
      '-d',
      '--pod',
      o.name,
      '--name',
      `${o.name}-forwarder`,
      '--read-only',
      '--entrypoint',
      'node',
      o.forwarderImage,
      '-e',
      FORWARDER,
      HOST_LOOPBACK,
      ...o.forward.map(String),
    ]);
    return pod;
  }

  /** The host's address of a container port (its published loopback port). */
  url(containerPort: number): string {
    const port = this.published.get(String(containerPort));
    if (port === undefined) throw new Error(`container port ${containerPort} is not published by the pod`);
    return `http://127.0.0.1:${port}`;
  }

  containerName(spec: ContainerSpec): string {
    return `${this.name}-${spec.release}${spec.kind === 'Job' ? '-deploy-step' : ''}`;
  }

  /** `podman run` arguments that give a container exactly the chart's settings. */
  private runArgs(spec: ContainerSpec): string[] {
    const args = ['--pod', this.name, '--name', this.containerName(spec), '--user', spec.user];
    if (spec.readOnlyRootFilesystem) {
      // podman's --read-only adds writable /tmp, /var/tmp and /run of its own; the kubelet does not.
      args.push('--read-only', '--read-only-tmpfs=false');
    }
    if (spec.dropAllCapabilities) args.push('--cap-drop=ALL');
    if (spec.noNewPrivileges) args.push('--security-opt', 'no-new-privileges');
    // An emptyDir is writable by the pod's fsGroup (1000).
    for (const path of spec.emptyDirs) args.push('--mount', `type=tmpfs,destination=${path},tmpfs-mode=1777`);
    // A Secret volume: its files in a directory of their own, mounted read-only (readable by the pod's user).
    for (const { mountPath, files } of spec.secretDirs) {
      const dir = mkdtempSync(join(this.secrets, 'volume-'));
      chmodSync(dir, 0o755);
      for (const [name, content] of Object.entries(files))
        writeFileSync(join(dir, name), content, { mode: 0o444 });
      args.push('--mount', `type=bind,source=${dir},destination=${mountPath},ro=true`);
    }
    for (const [name, value] of Object.entries(spec.env)) args.push('--env', `${name}=${value}`);
    // The health check of the image runs when asked (`podman healthcheck run`): its timer needs systemd.
    args.push('--health-interval', 'disable');
    args.push('--stop-timeout', String(spec.terminationGracePeriodSeconds));
    return [...args, spec.image, ...spec.args];
  }

  /** Runs a Job's container to its end (as the chart's hook would), and answers its exit code. */
  async runJob(spec: ContainerSpec, timeoutMs: number): Promise<number> {
    const name = this.containerName(spec);
    await podman(this.env, ['rm', '-f', '--ignore', name]);
    await podman(this.env, ['create', ...this.runArgs(spec)]);
    const log = this.followLogs(name, spec);
    await podman(this.env, ['start', name]);
    const { stdout } = await podman(this.env, ['wait', name], timeoutMs);
    await log;
    return Number(stdout.trim());
  }

  /** Starts a Deployment's container (detached); its output goes to the test's artifacts. */
  async start(spec: ContainerSpec): Promise<void> {
    const name = this.containerName(spec);
    await podman(this.env, ['rm', '-f', '--ignore', name]);
    await podman(this.env, ['create', ...this.runArgs(spec)]);
    await podman(this.env, ['start', name]);
    void this.followLogs(name, spec);
  }

  /** Starts a container that was stopped, with the same settings. */
  async restart(spec: ContainerSpec): Promise<void> {
    await podman(this.env, ['start', this.containerName(spec)]);
    void this.followLogs(this.containerName(spec), spec);
  }

  private followLogs(name: string, spec: ContainerSpec): Promise<void> {
    const file = join(this.artifacts, `${spec.release}${spec.kind === 'Job' ? '-deploy-step' : ''}.log`);
    this.logs.push(file);
    const out = createWriteStream(file, { flags: 'a' });
    const child = spawn('podman', ['logs', '-f', name], { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(out);
    child.stderr.pipe(out);
    return new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /** What the container wrote (stdout and stderr). */
  async logsOf(spec: ContainerSpec): Promise<string> {
    const { stdout, stderr } = await podman(this.env, ['logs', this.containerName(spec)]);
    return stdout + stderr;
  }

  async state(spec: ContainerSpec): Promise<{ running: boolean; exitCode: number }> {
    const { stdout } = await podman(this.env, [
      'inspect',
      '--format',
      '{{.State.Running}} {{.State.ExitCode}}',
      this.containerName(spec),
    ]);
    const [running, exitCode] = stdout.trim().split(' ');
    return { running: running === 'true', exitCode: Number(exitCode) };
  }

  /**
   * Asks a probe once, as the kubelet does: an HTTP GET of the probe's path on its (named) port, within its
   * timeout; 200-399 is success.
   */
  async probeOnce(spec: ContainerSpec, probe: Probe): Promise<boolean> {
    const port = spec.ports.find((p) => p.name === probe.port || String(p.containerPort) === probe.port);
    if (!port) throw new Error(`${spec.release}: probe port "${probe.port}" is no container port`);
    try {
      const response = await fetch(`${this.url(port.containerPort)}${probe.path}`, {
        signal: AbortSignal.timeout(probe.timeoutSeconds * 1000),
      });
      await response.arrayBuffer();
      return response.status >= 200 && response.status < 400;
    } catch {
      return false;
    }
  }

  /**
   * Waits for a probe the way the kubelet applies it: every periodSeconds, failing after failureThreshold
   * failures in a row. Answers how many seconds it took to succeed; throws (naming the service and probe) on
   * failure or when the container exits meanwhile.
   */
  async waitForProbe(spec: ContainerSpec, which: 'startup' | 'readiness' | 'liveness'): Promise<number> {
    const probe = spec.probes[which];
    if (!probe) throw new Error(`${spec.release}: the chart renders no ${which} probe`);
    const began = Date.now();
    for (let failures = 0; ;) {
      if (await this.probeOnce(spec, probe)) return (Date.now() - began) / 1000;
      failures += 1;
      const { running, exitCode } = await this.state(spec);
      if (!running) {
        throw new Error(
          `${spec.release} exited with ${exitCode} before its ${which} probe passed:\n${(await this.logsOf(spec)).slice(-3000)}`,
        );
      }
      if (failures >= probe.failureThreshold) {
        throw new Error(
          `${spec.release}: ${which} probe ${probe.path} failed ${failures} times in a row (${probe.periodSeconds} s apart)`,
        );
      }
      await new Promise((r) => setTimeout(r, probe.periodSeconds * 1000));
    }
  }

  /**
   * Stops a container as the kubelet does: the preStop hook, then SIGTERM (the image's stop signal), then
   * SIGKILL once the termination grace period (counted from the preStop hook's start) has passed.
   */
  async stop(spec: ContainerSpec): Promise<Stopped> {
    const name = this.containerName(spec);
    const began = Date.now();
    const grace = spec.terminationGracePeriodSeconds;
    if (spec.preStop) await podman(this.env, ['exec', name, ...spec.preStop], grace * 1000);
    const left = Math.max(1, Math.ceil(grace - (Date.now() - began) / 1000));
    await podman(this.env, ['stop', '--time', String(left), name], (left + 30) * 1000);
    const { exitCode } = await this.state(spec);
    return { exitCode, seconds: (Date.now() - began) / 1000, gracePeriodSeconds: grace };
  }

  /** The image's own HEALTHCHECK, run once in the container (`podman healthcheck run`): true when healthy. */
  async healthcheck(spec: ContainerSpec): Promise<boolean> {
    try {
      await podman(this.env, ['healthcheck', 'run', this.containerName(spec)]);
      return true;
    } catch {
      return false;
    }
  }

  /** Removes the pod and everything in it, and its Secret volumes' files. */
  async remove(): Promise<void> {
    await podman(this.env, ['pod', 'rm', '-f', '--ignore', this.name], 180_000);
    rmSync(this.secrets, { recursive: true, force: true });
  }

  /** Removes every pod `owner` made (with its containers) and their Secret directories: what a killed run left. */
  static async removeLeftovers(owner: string): Promise<void> {
    const env = await podmanEnv();
    const { stdout } = await podman(env, ['pod', 'ps', '-q', '--filter', `label=${OWNER_LABEL}=${owner}`]);
    const pods = stdout.split('\n').filter(Boolean);
    if (pods.length > 0) await podman(env, ['pod', 'rm', '-f', '--ignore', ...pods], 180_000);
    for (const dir of readdirSync(tmpdir()).filter((d) => d.startsWith(secretsPrefix(owner)))) {
      rmSync(join(tmpdir(), dir), { recursive: true, force: true });
    }
  }
}

/**
 * Listens on 127.0.0.1:<port> for each port given and forwards to <host>:<port>: the broker's advertised
 * 127.0.0.1:<port>, and PostgreSQL's, mean the same inside the pod as on the host.
 */
const FORWARDER = `
const net = require('node:net');
const [host, ...ports] = process.argv.slice(1);
for (const port of ports.map(Number)) {
  net.createServer((inbound) => {
    const outbound = net.connect(port, host);
    inbound.pipe(outbound).pipe(inbound);
    const close = () => { inbound.destroy(); outbound.destroy(); };
    inbound.on('error', close);
    outbound.on('error', close);
  }).listen(port, '127.0.0.1');
}
process.on('SIGTERM', () => process.exit(0));
`;
