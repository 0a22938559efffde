import type { Messenger } from './types.js';

export interface LoggedRequest {
  at: number;
  messenger: Messenger;
  botId: number | undefined;
  /** Telegram method name as called, or MAX `VERB /path`. */
  method: string;
  /** Telegram: the merged parameters. MAX: `{query, body}`. */
  params: unknown;
  status: number;
  /** The error description (Telegram) or message (MAX) when the call failed. */
  error: string | undefined;
}

/** The last `size` bot API calls, so a test can assert on exactly what a client sent. */
export class RequestLog {
  private entries: LoggedRequest[] = [];

  constructor(private readonly size: number) {}

  add(entry: LoggedRequest): void {
    if (this.size === 0) return;
    this.entries.push(entry);
    if (this.entries.length > this.size * 2) this.entries = this.entries.slice(-this.size);
  }

  list(filter: { botId?: number | undefined; limit: number }): LoggedRequest[] {
    const matching =
      filter.botId === undefined ? this.entries : this.entries.filter((e) => e.botId === filter.botId);
    return matching.slice(-Math.min(filter.limit, this.size));
  }

  clear(): void {
    this.entries = [];
  }
}
