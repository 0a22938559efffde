import type { HostileVariant } from './hostile.js';
import type { Messenger } from './types.js';

/**
 * `drop-after-delivery`: the call does what it asks (a message reaches the chat), then the connection drops
 * before the answer, as a network fault after the request was taken would. `hostile-error`: the call is
 * answered with an error whose text no client should trust (hostile.ts).
 */
export type FaultKind = 'latency' | '5xx' | 'timeout' | '429' | 'drop-after-delivery' | 'hostile-error';

export interface FaultSpec {
  kind: FaultKind;
  /** Only this messenger's API (both when absent). */
  messenger?: Messenger | undefined;
  /** Only calls made with this bot token (every bot when absent). */
  token?: string | undefined;
  /** Only this method: a Telegram method name or a MAX path (`messages`, `updates`, ...), any case. */
  method?: string | undefined;
  /** How many calls it hits before it is spent. */
  count: number;
  /** latency: added delay; timeout: how long the call is held before the connection is dropped. */
  ms?: number | undefined;
  /** 5xx, hostile-error: the status to answer. */
  status?: number | undefined;
  /** hostile-error: what the answer holds. */
  hostile?: HostileVariant | undefined;
  /** hostile-error `huge`: how many characters its text has. */
  size?: number | undefined;
  /** 429: the retry_after (Telegram) to announce. */
  retryAfter?: number | undefined;
}

export interface Fault extends FaultSpec {
  readonly id: number;
  remaining: number;
}

/** Scripted failures of the bot APIs; each matching call spends one, first added first. */
export class Faults {
  private faults: Fault[] = [];
  private nextId = 1;

  add(spec: FaultSpec): Fault {
    const fault: Fault = { ...spec, id: this.nextId++, remaining: spec.count };
    this.faults.push(fault);
    return fault;
  }

  list(): readonly Fault[] {
    return this.faults;
  }

  /** The id the next fault gets (saved with the faults, so ids are never reused). */
  get nextFaultId(): number {
    return this.nextId;
  }

  /** Puts back faults saved earlier, first added first. */
  restore(faults: readonly Fault[], nextId: number): void {
    this.faults = faults.map((f) => ({ ...f }));
    this.nextId = nextId;
  }

  remove(id: number): boolean {
    const before = this.faults.length;
    this.faults = this.faults.filter((f) => f.id !== id);
    return this.faults.length < before;
  }

  clear(): void {
    this.faults = [];
  }

  /** The fault this call meets, if any, spending one of its count. */
  take(messenger: Messenger, token: string, method: string): Fault | undefined {
    if (this.faults.length === 0) return undefined;
    const name = method.toLowerCase();
    const fault = this.faults.find(
      (f) =>
        (!f.messenger || f.messenger === messenger) &&
        (!f.token || f.token === token) &&
        (!f.method || f.method.toLowerCase() === name),
    );
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.remove(fault.id);
    return fault;
  }
}
