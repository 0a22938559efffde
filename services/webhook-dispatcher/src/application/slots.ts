/**
 * Deliveries in flight in one replica, in all and per company: at most `max` in all and `perCompany` to
 * one company's endpoint, so a slow endpoint holds only its own slots.
 */
export class Slots {
  private readonly byCompany = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly max: number,
    private readonly perCompany: number,
  ) {}

  /** Takes a slot for the company if one is free. */
  take(companyId: string): boolean {
    const used = this.byCompany.get(companyId) ?? 0;
    if (this.total >= this.max || used >= this.perCompany) return false;
    this.byCompany.set(companyId, used + 1);
    this.total++;
    return true;
  }

  release(companyId: string): void {
    const left = (this.byCompany.get(companyId) ?? 1) - 1;
    if (left > 0) this.byCompany.set(companyId, left);
    else this.byCompany.delete(companyId);
    this.total--;
  }

  inFlight(): number {
    return this.total;
  }

  free(): number {
    return this.max - this.total;
  }

  /** What a claim may take: companies with something in flight get what they have left; others `perCompany`. */
  forClaim(): { fullCompanies: string[]; freeSlots: Map<string, number>; defaultSlots: number } {
    const freeSlots = new Map<string, number>();
    const fullCompanies: string[] = [];
    for (const [companyId, used] of this.byCompany) {
      const left = this.perCompany - used;
      if (left > 0) freeSlots.set(companyId, left);
      else fullCompanies.push(companyId);
    }
    return { fullCompanies, freeSlots, defaultSlots: this.perCompany };
  }
}
