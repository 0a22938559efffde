// The two ends of a pipeline run (the benchmark's and the count guard's): an open-loop load generator (sends start on a fixed schedule whatever the
// answers do, so a slow pipeline shows as latency instead of slowing the load: no coordinated omission)
// and a light webhook receiver that notes when each message's status arrives.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { percentile } from '@mds/message-state';
import type { Pool } from 'undici';

/** Wall-clock milliseconds with sub-millisecond resolution (comparable with other processes' Date.now()). */
export const wallNow = () => performance.timeOrigin + performance.now();

export interface SendRecord {
  phase: string;
  /** When the schedule said this send starts. */
  intendedAt: number;
  /** When the 202 arrived. */
  acceptedAt: number;
  /** When the webhook with its status arrived. */
  webhookAt?: number;
  state?: string;
}

export interface Target {
  apiKey: string;
  phone: string;
}

export class Ledger {
  readonly sends = new Map<string, SendRecord>();
  /** Webhooks that came before their 202 was read (possible under load), by event id. */
  private readonly early = new Map<string, { at: number; state: string }>();
  /** Sends made (answered or not). */
  fired = 0;
  accepted = 0;
  delivered = 0;
  duplicates = 0;
  unknown = 0;
  /** Sends refused (an answer other than 202, or no answer), by reason ("429 auth_rate_limited"). */
  refused = new Map<string, number>();
  /** The same, by phase. */
  private readonly refusedIn = new Map<string, Map<string, number>>();

  accept(eventId: string, record: SendRecord): void {
    this.accepted++;
    const early = this.early.get(eventId);
    if (early) {
      this.early.delete(eventId);
      record.webhookAt = early.at;
      record.state = early.state;
      this.delivered++;
    }
    this.sends.set(eventId, record);
  }

  /** Sends made and not refused whose webhook has not come (yet): waiting anywhere in the pipeline. */
  get backlog(): number {
    return this.fired - [...this.refused.values()].reduce((a, b) => a + b, 0) - this.delivered;
  }

  refuse(reason: string, phase: string): void {
    this.refused.set(reason, (this.refused.get(reason) ?? 0) + 1);
    const ofPhase = this.refusedIn.get(phase) ?? new Map<string, number>();
    ofPhase.set(reason, (ofPhase.get(reason) ?? 0) + 1);
    this.refusedIn.set(phase, ofPhase);
  }

  /** Refusals of one phase, by reason. */
  refusedOf(phase: string): ReadonlyMap<string, number> {
    return this.refusedIn.get(phase) ?? new Map();
  }

  /** Sends of one phase answered 429 (the gateway refused a company's traffic as too much). */
  tooManyOf(phase: string): number {
    return [...this.refusedOf(phase)]
      .filter(([reason]) => reason.startsWith('429'))
      .reduce((n, [, c]) => n + c, 0);
  }

  webhook(eventId: string, state: string, at: number): void {
    const record = this.sends.get(eventId);
    if (!record) {
      if (this.early.has(eventId)) this.duplicates++;
      else this.early.set(eventId, { at, state });
      return;
    }
    if (record.webhookAt !== undefined) {
      this.duplicates++;
      return;
    }
    record.webhookAt = at;
    record.state = state;
    this.delivered++;
  }

  of(phase: string): SendRecord[] {
    return [...this.sends.values()].filter((r) => r.phase === phase);
  }
}

/**
 * POSTs /api/v1/send at `rate` per second for `seconds`, each send starting at its scheduled moment
 * (checked every few milliseconds) whether earlier ones were answered or not. Sends that would exceed
 * `maxInFlight` are not made and counted as `skipped` (the generator's own limit, reported). Resolves when
 * the schedule ends; `answered` resolves once every send made has its answer.
 */
export async function offerLoad(o: {
  pool: Pool;
  ledger: Ledger;
  phase: string;
  rate: number;
  seconds: number;
  targets: Target[];
  maxInFlight: number;
  body: (target: Target) => string;
}): Promise<{ offered: number; skipped: number; inFlightMax: number; answered: Promise<void> }> {
  const start = wallNow();
  const total = Math.round(o.rate * o.seconds);
  let next = 0;
  let inFlight = 0;
  let inFlightMax = 0;
  let skipped = 0;
  const pending = new Set<Promise<void>>();
  const fire = (i: number) => {
    const target = o.targets[i % o.targets.length]!;
    const intendedAt = start + (i * 1000) / o.rate;
    inFlight++;
    o.ledger.fired++;
    inFlightMax = Math.max(inFlightMax, inFlight);
    const done = o.pool
      .request({
        path: '/api/v1/send',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': target.apiKey },
        body: o.body(target),
      })
      .then(async (response) => {
        const text = await response.body.text();
        if (response.statusCode === 202) {
          const eventId = (JSON.parse(text) as { event_id: string }).event_id;
          o.ledger.accept(eventId, { phase: o.phase, intendedAt, acceptedAt: wallNow() });
        } else {
          o.ledger.refuse(`${response.statusCode} ${problemCode(text)}`, o.phase);
        }
      })
      .catch((error: Error) => o.ledger.refuse(`${error.name}: ${error.message}`, o.phase))
      .finally(() => {
        inFlight--;
        pending.delete(done);
      });
    pending.add(done);
  };
  while (next < total) {
    const due = Math.min(total, Math.floor(((wallNow() - start) * o.rate) / 1000) + 1);
    for (; next < due; next++) {
      if (inFlight >= o.maxInFlight) skipped++;
      else fire(next);
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  // The schedule is over; sends still unanswered finish in the background (awaited through `answered`).
  return { offered: total, skipped, inFlightMax, answered: Promise.all(pending).then(() => undefined) };
}

/** The problem's code (the last segment of its type URI), or the start of a body that is no problem. */
function problemCode(body: string): string {
  try {
    const type = (JSON.parse(body) as { type?: unknown }).type;
    if (typeof type === 'string') return type.split('/').at(-1)!;
  } catch {
    // not JSON
  }
  return body.slice(0, 80);
}

/** One line per reason: "3x 429 auth_rate_limited; 1x 503 kafka_unavailable", or "none". */
export function describeRefusals(refused: ReadonlyMap<string, number>): string {
  return [...refused].map(([reason, n]) => `${n}x ${reason}`).join('; ') || 'none';
}

/**
 * Companies' webhook endpoints at `/c/<company index>`: answers 200 at once, notes the arrival of every
 * `message.status`, and verifies the signature (standardwebhooks, the company's secrets) of one webhook
 * in `verifyEvery`, to keep its own CPU small.
 */
export class BenchReceiver {
  private server: Server | undefined;
  private readonly verifiers = new Map<number, Webhook>();
  private count = 0;
  verified = 0;
  badSignatures = 0;
  url = '';

  constructor(
    private readonly ledger: Ledger,
    private readonly verifyEvery = 50,
  ) {}

  secretsOf(companyIndex: number, secret: string): void {
    this.verifiers.set(companyIndex, new Webhook(secret));
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        // The floor's bare chain (bench/floor.ts): an answer and nothing else.
        if (req.url === '/floor') return void res.writeHead(204).end();
        const at = wallNow();
        const body = Buffer.concat(chunks).toString('utf8');
        const payload = JSON.parse(body) as { type: string; event_id: string; state?: string };
        if (payload.type === 'message.status') this.ledger.webhook(payload.event_id, payload.state ?? '', at);
        if (this.count++ % this.verifyEvery === 0) {
          const company = Number(/^\/c\/(\d+)/.exec(req.url ?? '')?.[1]);
          try {
            this.verifiers.get(company)!.verify(body, req.headers as Record<string, string>);
            this.verified++;
          } catch {
            this.badSignatures++;
          }
        }
        res.writeHead(200).end();
      });
    });
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    if (!this.server) return Promise.resolve();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}

export function summary(values: number[]): string {
  const s = [...values].sort((a, b) => a - b);
  const f = (v: number) => (Number.isNaN(v) ? '-' : v < 10 ? v.toFixed(1) : v.toFixed(0));
  return `p50 ${f(percentile(s, 50))}  p90 ${f(percentile(s, 90))}  p99 ${f(percentile(s, 99))}  max ${f(s.at(-1) ?? NaN)} ms (n=${s.length})`;
}
