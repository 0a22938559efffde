/** Shapes the dashboard's API answers with, shared by its server and its web application. */

/** The overview's figures over a time range (per-minute counts summed into buckets). */
export interface Overview {
  since: string;
  until: string;
  bucketMinutes: number;
  /** Per time bucket: sent and failed by messenger, `<messenger>_sent` and `<messenger>_failed` for each of the catalogue. */
  series: ({ at: string } & { [count: `${string}_sent` | `${string}_failed`]: number })[];
  totals: { sent: number; failed: number };
  errors: { error_code: string; messenger: string; count: number }[];
  latency: { p50: number | null; p90: number | null; p99: number | null; count: number };
  bots: { bot_id: string; messenger: string; sent: number; failed: number; rate_limited: number }[];
  webhooks: {
    attempts: number;
    succeeded: number;
    success_rate: number | null;
    series: { at: string; succeeded: number; failed: number }[];
  };
}

/** A company's webhook endpoint as client-registry's admin API shows it (never a secret). */
export interface WebhookView {
  url: string;
  enabled: boolean;
  disabled_reason: string | null;
  secrets: { secret_id: string; created_at: string; expires_at: string | null }[];
}

/** One of a company's webhook endpoints as client-registry's admin API shows it (never a secret). */
export interface EndpointView {
  id: string;
  url: string;
  description: string;
  /** The notification types it receives; empty: every type, also types added later. */
  event_types: string[];
  enabled: boolean;
  disabled_reason: string | null;
  /** Turned off by the dispatcher (410 Gone, or failing for the whole window), not by a person. */
  disabled_automatically: boolean;
  rate_limit_per_second: number | null;
  secrets: { secret_id: string; current: boolean; expires_at: string | null }[];
}

/** An endpoint with how it has fared, from the dashboard's read model of its attempts. */
export interface EndpointWithHealth extends EndpointView {
  health: {
    attempts_24h: number;
    succeeded_24h: number;
    success_rate_24h: number | null;
    last_failure: {
      at: string;
      outcome: string;
      status_code: number | null;
      error: string | null;
    } | null;
  };
}

/** The dashboard's list of endpoints, with the rules its form follows. */
export interface EndpointList {
  endpoints: EndpointWithHealth[];
  /** Every notification type an endpoint may subscribe to. */
  event_types: string[];
  limits: { endpoints: number; description_length: number; rate_limit_per_second: number };
}
