import pg from 'pg';
import type { Logger } from '@mds/logging';

/** How often the relay's lock is confirmed at most: a pass starts only within this of the last confirmation. */
const LEADERSHIP_CHECK_MS = 1_000;
/**
 * How long a confirmation lets this replica publish: a pass's publish must end within it. A replica that
 * takes the lock waits this long before its first pass, so the one that lost it has surely finished.
 */
const LEADERSHIP_WINDOW_MS = 5_000;

/**
 * The relay's lock: a session advisory lock held on a connection of its own, confirmed before a pass at most
 * every LEADERSHIP_CHECK_MS, and a publishing window of LEADERSHIP_WINDOW_MS after each confirmation.
 */
export class RelayLeadership {
  private client: pg.Client | undefined;
  private leader = false;
  /** When the lock's session last answered; a pass publishes only within the window after it. */
  private confirmedAt = 0;
  /** Before this, a replica that just took the lock does not publish (the last leader may still be). */
  private notBefore = 0;

  constructor(
    private readonly name: string,
    private readonly databaseUrl: string,
    private readonly logger: Logger,
  ) {}

  /** Whether this replica may relay now: it holds the lock, and its session answered a moment ago. */
  async mayRelay(): Promise<boolean> {
    if (this.leader && Date.now() - this.confirmedAt < LEADERSHIP_CHECK_MS) return this.relaying();
    const client = await this.connection();
    if (this.leader) {
      // The lock lives as long as its session. A lock connection that died without a word (a half-open
      // TCP connection, a database failover) leaves this replica relaying while another takes the lock
      // and relays too, out of order. So the session must answer (within the query timeout) before a pass.
      try {
        await client.query('select 1');
      } catch (error) {
        this.logger.warn({ err: error }, 'outbox lock connection does not answer; no longer relaying');
        this.drop(client);
        throw error;
      }
      this.confirmedAt = Date.now();
      return this.relaying();
    }
    const result = await client.query<{ locked: boolean }>(
      'select pg_try_advisory_lock(hashtext($1)) as locked',
      [`${this.name}-outbox`],
    );
    this.leader = result.rows[0]!.locked;
    this.confirmedAt = Date.now();
    if (!this.leader) return false;
    this.notBefore = this.confirmedAt + LEADERSHIP_WINDOW_MS;
    this.logger.info('relaying the outbox');
    return false;
  }

  /** It holds the lock and its first window has passed. */
  relaying(): boolean {
    return this.leader && Date.now() >= this.notBefore;
  }

  /** How long a publish may take and still end within the window of the last confirmation. */
  windowLeftMs(): number {
    return Math.max(1, this.confirmedAt + LEADERSHIP_WINDOW_MS - Date.now());
  }

  /** A new leader waits its first window out (true once it has); false for one that need not wait. */
  async waitOutWindow(): Promise<boolean> {
    if (!this.leader || Date.now() >= this.notBefore) return false;
    await new Promise((r) => setTimeout(r, Math.max(0, this.notBefore - Date.now())));
    return true;
  }

  async release(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.leader = false;
    // end() waits for the server to close the session: a connection gone silent never would.
    if (client) {
      await Promise.race([
        client.end().catch(() => undefined),
        new Promise((r) => setTimeout(r, 5_000).unref()),
      ]);
    }
  }

  private drop(client: pg.Client): void {
    this.leader = false;
    if (this.client === client) this.client = undefined;
    client.end().catch(() => undefined);
  }

  private async connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      application_name: `${this.name}-outbox`,
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
      query_timeout: 5_000,
    });
    client.on('error', (error) => {
      this.logger.warn({ err: error }, 'outbox lock connection lost');
      this.drop(client);
    });
    try {
      await client.connect();
    } catch (error) {
      // A client that never connected queues queries forever: drop it and try afresh next time.
      this.drop(client);
      throw error;
    }
    this.client = client;
    return client;
  }
}
