import { endpointKey, type EndpointKey } from './ports.js';

/**
 * Deliveries in flight in one replica, in all and per endpoint: at most `max` in all and `perEndpoint` to one
 * endpoint, so a slow endpoint holds only its own slots (another endpoint of the same company keeps its own).
 */
export class Slots {
  private readonly byEndpoint = new Map<string, { endpoint: EndpointKey; used: number }>();
  private total = 0;

  constructor(
    private readonly max: number,
    private readonly perEndpoint: number,
  ) {}

  /** Takes a slot for the endpoint if one is free. */
  take(endpoint: EndpointKey): boolean {
    const key = endpointKey(endpoint);
    const entry = this.byEndpoint.get(key);
    const used = entry?.used ?? 0;
    if (this.total >= this.max || used >= this.perEndpoint) return false;
    if (entry) entry.used++;
    else
      this.byEndpoint.set(key, {
        endpoint: { companyId: endpoint.companyId, endpointId: endpoint.endpointId },
        used: 1,
      });
    this.total++;
    return true;
  }

  release(endpoint: EndpointKey): void {
    const key = endpointKey(endpoint);
    const entry = this.byEndpoint.get(key);
    if (entry && entry.used > 1) entry.used--;
    else this.byEndpoint.delete(key);
    this.total--;
  }

  inFlight(): number {
    return this.total;
  }

  free(): number {
    return this.max - this.total;
  }

  /** What a claim may take: endpoints with something in flight get what they have left; others `perEndpoint`. */
  forClaim(): {
    fullEndpoints: EndpointKey[];
    freeSlots: (EndpointKey & { free: number })[];
    defaultSlots: number;
  } {
    const freeSlots: (EndpointKey & { free: number })[] = [];
    const fullEndpoints: EndpointKey[] = [];
    for (const { endpoint, used } of this.byEndpoint.values()) {
      const left = this.perEndpoint - used;
      if (left > 0) freeSlots.push({ ...endpoint, free: left });
      else fullEndpoints.push(endpoint);
    }
    return { fullEndpoints, freeSlots, defaultSlots: this.perEndpoint };
  }
}
