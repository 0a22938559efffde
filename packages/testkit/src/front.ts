import { fork, type ChildProcess } from 'node:child_process';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A process behind a front: where it listens, and whether it should get new connections. */
export interface Backend {
  port: number;
  /** Its last readiness check passed. */
  ready: boolean;
  /** It is being replaced or stopped: no new connections, whatever its readiness says. */
  draining: boolean;
}

/**
 * One address for several replicas of a service, as a Kubernetes Service with an ingress in front gives:
 * each new TCP connection goes to the next ready replica (round robin, per connection, so HTTP keep-alive
 * and gRPC channels stay on the replica they opened on); a replica that refuses the connection is skipped
 * for the next one (ingress-nginx's `proxy_next_upstream error`); when no replica is ready, connections go
 * to any replica not being stopped (Envoy's panic routing), so that callers get the service's own answer
 * (a gateway's 503) rather than a refused connection.
 */
export class Front {
  private server: Server | undefined;
  private readonly open = new Set<Socket>();
  private turn = 0;

  constructor(
    readonly port: number,
    private readonly backends: () => readonly Backend[],
  ) {}

  async start(): Promise<void> {
    const server = createServer((client) => this.accept(client));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  async stop(): Promise<void> {
    for (const socket of this.open) socket.destroy();
    const server = this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private candidates(): Backend[] {
    const serving = this.backends().filter((b) => !b.draining);
    const ready = serving.filter((b) => b.ready);
    return ready.length > 0 ? ready : serving;
  }

  private accept(client: Socket): void {
    client.pause();
    this.track(client);
    const candidates = this.candidates();
    const start = this.turn++;
    const attempt = (tried: number): void => {
      if (tried >= candidates.length || client.destroyed) {
        client.destroy();
        return;
      }
      const backend = candidates[(start + tried) % candidates.length]!;
      const upstream = createConnection({ host: '127.0.0.1', port: backend.port });
      upstream.once('error', () => {
        upstream.destroy();
        attempt(tried + 1);
      });
      upstream.once('connect', () => {
        upstream.removeAllListeners('error');
        this.track(upstream);
        const close = () => {
          client.destroy();
          upstream.destroy();
        };
        for (const socket of [client, upstream]) {
          socket.once('error', close);
          socket.once('close', close);
        }
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    attempt(0);
  }

  private track(socket: Socket): void {
    this.open.add(socket);
    socket.once('close', () => this.open.delete(socket));
    socket.once('error', () => socket.destroy());
  }
}

/** What the stack tells its front process. */
export type FrontCommand =
  { type: 'listen'; port: number } | { type: 'backends'; port: number; backends: Backend[] };

/** What the front process answers to `listen`. */
export type FrontReply =
  { type: 'listening'; port: number } | { type: 'failed'; port: number; error: string };

/**
 * The fronts of a stack in a process of their own (`front-process.ts`), so that whatever the test process
 * does (reading the log, checking thousands of outcomes) never holds up the traffic they carry, as
 * kube-proxy is not held up by a client. The stack tells it which replicas are ready or draining.
 */
export class FrontProcess {
  private child: ChildProcess | undefined;
  private readonly waiting = new Map<number, (reply: FrontReply) => void>();

  get running(): boolean {
    return this.child?.connected ?? false;
  }

  start(): void {
    const here = fileURLToPath(import.meta.url);
    const entry = join(dirname(here), `front-process${extname(here)}`);
    // The source when run from TypeScript (tests), the build otherwise.
    const child = fork(entry, [], {
      execArgv: extname(here) === '.ts' ? ['--import', 'tsx'] : [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.on('message', (reply: FrontReply) => {
      this.waiting.get(reply.port)?.(reply);
      this.waiting.delete(reply.port);
    });
    this.child = child;
  }

  /** Opens a front on `port`; resolves once it listens. */
  listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.set(port, (reply) =>
        reply.type === 'listening' ? resolve() : reject(new Error(`front on ${port}: ${reply.error}`)),
      );
      this.send({ type: 'listen', port });
    });
  }

  /** The replicas behind the front on `port`, as they are now (nothing once the process has stopped). */
  update(port: number, backends: Backend[]): void {
    if (this.running) this.send({ type: 'backends', port, backends });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }

  private send(command: FrontCommand): void {
    if (!this.child?.connected) throw new Error('the front process is not running');
    this.child.send(command);
  }
}
