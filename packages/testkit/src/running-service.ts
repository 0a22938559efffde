import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '@mds/local-infra';
import type { ServiceDefinition } from './harness.js';

const readyTimeoutMs = 60_000;

export class RunningService {
  private child: ChildProcess | undefined;
  private exitCode: Promise<number | null> = Promise.resolve(null);
  readonly logFile: string;

  /**
   * @param label names its log file (`<label>.log`): the service's name, with the replica's number when
   *   there are several.
   * @param ports the ports it listens on, by variable (HTTP_PORT and the definition's `listens`).
   */
  constructor(
    readonly definition: ServiceDefinition,
    readonly label: string,
    readonly ports: Record<string, number>,
    private env: NodeJS.ProcessEnv,
    artifacts: string,
  ) {
    this.logFile = join(artifacts, `${label}.log`);
  }

  /** Its HTTP port. */
  get port(): number {
    return this.ports.HTTP_PORT!;
  }

  /** Whether the process runs (started, and not exited). */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Its ops listener (OPS_PORT): /readyz and /metrics, kept off the service's public port. */
  get opsUrl(): string {
    return `http://127.0.0.1:${this.ports.OPS_PORT ?? this.port}`;
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
        throw new Error(`${this.label} exited with ${child.exitCode} while starting; see ${this.logFile}`);
      }
      if (await this.ready()) return;
      if (Date.now() > deadline)
        throw new Error(`${this.label} was not ready in ${readyTimeoutMs} ms; see ${this.logFile}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async ready(): Promise<boolean> {
    try {
      return (await fetch(`${this.opsUrl}/readyz`, { signal: AbortSignal.timeout(1_000) })).status === 200;
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

  /** Stops and starts it again on the same ports; `env` changes some of its settings from then on. */
  async restart(signal: NodeJS.Signals = 'SIGKILL', env: Record<string, string> = {}): Promise<void> {
    await this.kill(signal);
    this.env = { ...this.env, ...env };
    await this.start();
  }
}
