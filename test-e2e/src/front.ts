import { createConnection, createServer, type Server, type Socket } from 'node:net';

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
