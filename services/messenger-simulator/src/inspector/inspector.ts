// The webhook inspector: a local stand-in for a company's webhook endpoint (a webhook.site on this
// machine). It keeps what arrived, per inspector name, and whether each delivery's signature verifies.
import { verifyDelivery, type VerifyReason } from './verify.js';

/** Inspector names: what goes in `/inspector/<name>/hooks`. */
export const INSPECTOR_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export interface InspectorLimits {
  /** Deliveries kept per name; the oldest goes first. */
  perName: number;
  /** Names kept; the one used least recently goes first, with its secrets. */
  names: number;
}

export const DEFAULT_INSPECTOR_LIMITS: InspectorLimits = { perName: 500, names: 100 };

export interface Delivery {
  /** Increases by one with every delivery to any name. */
  seq: number;
  receivedAt: number;
  method: string;
  /** Lower-case names; a repeated header's values joined with ", ". */
  headers: Record<string, string>;
  body: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
  webhookId: string | undefined;
  /** From the JSON body: what a webhook of this service carries. */
  type: string | undefined;
  eventId: string | undefined;
  state: string | undefined;
  errorCode: string | undefined;
  errorDescription: string | undefined;
  verified: boolean;
  reason: VerifyReason;
  detail: string;
}

interface Slot {
  secrets: string[];
  deliveries: Delivery[];
}

/** A delivery as a store keeps it; `json` is parsed from `body` again when it is restored. */
export type SavedDelivery = Omit<Delivery, 'json'>;

/** Everything the inspector holds, as plain data: names least recently used first. */
export interface SavedInspector {
  seq: number;
  names: { name: string; secrets: string[]; deliveries: SavedDelivery[] }[];
}

export class WebhookInspector {
  private readonly slots = new Map<string, Slot>();
  private seq = 0;

  constructor(readonly limits: InspectorLimits = DEFAULT_INSPECTOR_LIMITS) {}

  /**
   * Replaces the secrets a name's deliveries are verified with (what the company holds). Deliveries that
   * arrived before any secret was registered (a retry landing before `npm start` registered them) are
   * verified again; one whose timestamp has meanwhile grown too old keeps saying no secret was there.
   */
  setSecrets(name: string, secrets: readonly string[]): void {
    const slot = this.slot(name);
    slot.secrets = [...secrets];
    for (const delivery of slot.deliveries) {
      if (delivery.reason !== 'no_secret') continue;
      const verdict = verifyDelivery(delivery.body, delivery.headers, slot.secrets);
      if (verdict.reason !== 'timestamp_too_old') Object.assign(delivery, verdict);
    }
  }

  secretCount(name: string): number {
    return this.slots.get(name)?.secrets.length ?? 0;
  }

  /** Verifies and keeps a delivery as it arrived. */
  receive(
    name: string,
    request: { method: string; headers: Record<string, string>; body: string; at: number },
  ): Delivery {
    const slot = this.slot(name);
    const json = parseJson(request.body);
    const field = (key: string) => {
      const value = isRecord(json) ? json[key] : undefined;
      return typeof value === 'string' ? value : undefined;
    };
    const verdict = verifyDelivery(request.body, request.headers, slot.secrets);
    const delivery: Delivery = {
      seq: ++this.seq,
      receivedAt: request.at,
      method: request.method,
      headers: request.headers,
      body: request.body,
      json,
      webhookId: request.headers['webhook-id'],
      type: field('type'),
      eventId: field('event_id'),
      state: field('state'),
      errorCode: field('error_code'),
      errorDescription: field('error_description'),
      ...verdict,
    };
    slot.deliveries.push(delivery);
    if (slot.deliveries.length > this.limits.perName) slot.deliveries.shift();
    return delivery;
  }

  /** A name's deliveries, newest first. */
  deliveries(name: string, limit = this.limits.perName): Delivery[] {
    const kept = this.slots.get(name)?.deliveries ?? [];
    return kept.slice(-limit).reverse();
  }

  /** The newest delivery's seq (0: none), so a page can tell something arrived. */
  latest(name: string): number {
    return this.slots.get(name)?.deliveries.at(-1)?.seq ?? 0;
  }

  /** Every name with secrets or deliveries, most recently used first. */
  names(): { name: string; secrets: number; deliveries: number; latest: Delivery | undefined }[] {
    return [...this.slots.entries()].reverse().map(([name, slot]) => ({
      name,
      secrets: slot.secrets.length,
      deliveries: slot.deliveries.length,
      latest: slot.deliveries.at(-1),
    }));
  }

  clearDeliveries(name: string): void {
    const slot = this.slots.get(name);
    if (slot) slot.deliveries = [];
  }

  /** Forgets every name, secret and delivery. */
  reset(): void {
    this.slots.clear();
  }

  /** The seq of the latest delivery to any name. */
  get lastSeq(): number {
    return this.seq;
  }

  /** Every name with its secrets and deliveries, least recently used first (for a store to keep). */
  slotsInUseOrder(): { name: string; secrets: readonly string[]; deliveries: readonly Delivery[] }[] {
    return [...this.slots].map(([name, slot]) => ({ name, ...slot }));
  }

  /** Puts back what a store kept. */
  restore(saved: SavedInspector): void {
    this.slots.clear();
    for (const { name, secrets, deliveries } of saved.names) {
      this.slots.set(name, {
        secrets: [...secrets],
        deliveries: deliveries.map((d) => ({ ...d, json: parseJson(d.body) })),
      });
    }
    this.seq = saved.seq;
  }

  private slot(name: string): Slot {
    let slot = this.slots.get(name);
    if (slot) {
      this.slots.delete(name);
    } else {
      slot = { secrets: [], deliveries: [] };
      if (this.slots.size >= this.limits.names) this.slots.delete(this.slots.keys().next().value!);
    }
    this.slots.set(name, slot);
    return slot;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
