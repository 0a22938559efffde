import { DomainError } from '@mds/eventsourcing';
import {
  endpointIdOf,
  LEGACY_WEBHOOK_ENDPOINT_ID,
  MAX_ENDPOINT_DESCRIPTION_LENGTH,
  MAX_ENDPOINT_RATE_LIMIT,
  MAX_WEBHOOK_ENDPOINTS,
  WEBHOOK_ENDPOINT_ID_PATTERN,
  WEBHOOK_EVENT_TYPES,
  type AccountEvent,
} from '@mds/contracts';
import { sealed, unsealed, type SealedSecret } from './sealed-secrets.js';

// A company's webhook endpoints (0 to MAX_WEBHOOK_ENDPOINTS): what the account decides about them and how their
// events fold. Events written before endpoints had ids name none: they are about ep_default, the single URL of
// older versions (endpointIdOf).

export interface WebhookSecretRecord {
  secretId: string;
  secret: SealedSecret;
  createdAt: string;
  /** Set once rotated out: it keeps signing until then. */
  expiresAt?: string;
}

/** What a person sets on an endpoint. */
export interface WebhookEndpointSettings {
  url: string;
  description: string;
  /** The notification types it receives; empty: every type, also types added later. */
  eventTypes: string[];
  /** Requests per second at most; absent: no limit of its own. */
  rateLimitPerSecond?: number;
}

export interface WebhookEndpointRecord extends WebhookEndpointSettings {
  endpointId: string;
  enabled: boolean;
  disabledReason?: string;
  /** Set when the dispatcher turned it off (410 Gone, or failing for the documented window). */
  disabledAutomatically?: boolean;
  /** The current secret (no expiresAt) and rotated-out ones still signing. */
  secrets: WebhookSecretRecord[];
}

type NewSecret = { secretId: string; secret: SealedSecret };

/**
 * The commands about endpoints. Without an endpointId a command is about ep_default (the single-URL API of older
 * versions), and refused with WEBHOOK_NOT_CONFIGURED when there is none; with one, WEBHOOK_ENDPOINT_NOT_FOUND.
 */
export type WebhookCommand =
  /** The single-URL API: sets ep_default's URL, adding it (with a new secret) if the company has none. */
  | { type: 'ConfigureWebhook'; url: string; newSecret: NewSecret }
  | {
      type: 'AddWebhookEndpoint';
      endpointId: string;
      settings: WebhookEndpointSettings;
      newSecret: NewSecret;
      enabled: boolean;
    }
  | { type: 'ChangeWebhookEndpoint'; endpointId: string; changes: Partial<WebhookEndpointSettings> }
  | { type: 'RemoveWebhookEndpoint'; endpointId: string }
  | {
      type: 'RotateWebhookSecret';
      endpointId?: string;
      secretId: string;
      secret: SealedSecret;
      previousExpiresAt: string;
    }
  | { type: 'DisableWebhook'; endpointId?: string; reason: string; automatic?: boolean }
  | { type: 'EnableWebhook'; endpointId?: string };

type AccountEventCase = NonNullable<AccountEvent['event']>;
type WebhookEventCase = Extract<
  AccountEventCase,
  {
    $case:
      | 'webhookEndpointConfigured'
      | 'webhookSecretRotated'
      | 'webhookEndpointDisabled'
      | 'webhookEndpointEnabled'
      | 'webhookEndpointRemoved';
  }
>;

export function findEndpoint(
  endpoints: readonly WebhookEndpointRecord[],
  endpointId: string,
): WebhookEndpointRecord | undefined {
  return endpoints.find((e) => e.endpointId === endpointId);
}

/** The endpoint a command names, or the refusal that says it is not there. */
function endpointOf(endpoints: readonly WebhookEndpointRecord[], endpointId: string | undefined) {
  const endpoint = findEndpoint(endpoints, endpointId ?? LEGACY_WEBHOOK_ENDPOINT_ID);
  if (endpoint) return endpoint;
  if (endpointId === undefined)
    throw new DomainError('WEBHOOK_NOT_CONFIGURED', 'the company has no webhook endpoint');
  throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND', `no webhook endpoint ${endpointId}`);
}

const currentSecret = (endpoint: WebhookEndpointRecord) => endpoint.secrets.find((s) => !s.expiresAt);

/** The rules of an endpoint's settings (the admin API checks them first, with field errors). */
function checkSettings(settings: WebhookEndpointSettings): WebhookEndpointSettings {
  let url: URL | undefined;
  try {
    url = new URL(settings.url);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol))
    throw new DomainError('INVALID_WEBHOOK_URL', 'a webhook URL is an http(s) URL');
  if (url.username || url.password || /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(settings.url))
    throw new DomainError('INVALID_WEBHOOK_URL', 'a webhook URL may not contain a user name or password');
  if (settings.description.length > MAX_ENDPOINT_DESCRIPTION_LENGTH)
    throw new DomainError(
      'INVALID_DESCRIPTION',
      `a description is at most ${MAX_ENDPOINT_DESCRIPTION_LENGTH} characters`,
    );
  const unknown = settings.eventTypes.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0)
    throw new DomainError(
      'UNKNOWN_WEBHOOK_EVENT_TYPE',
      `unknown event type ${unknown.join(', ')} (known: ${WEBHOOK_EVENT_TYPES.join(', ')})`,
    );
  const rate = settings.rateLimitPerSecond;
  if (rate !== undefined && (!Number.isInteger(rate) || rate < 1 || rate > MAX_ENDPOINT_RATE_LIMIT))
    throw new DomainError(
      'INVALID_RATE_LIMIT',
      `a rate limit is a whole number of requests per second from 1 to ${MAX_ENDPOINT_RATE_LIMIT}`,
    );
  return { ...settings, eventTypes: [...new Set(settings.eventTypes)] };
}

function configured(
  endpointId: string,
  settings: WebhookEndpointSettings,
  secret: NewSecret,
): WebhookEventCase {
  return {
    $case: 'webhookEndpointConfigured',
    value: {
      endpointId,
      url: settings.url,
      description: settings.description,
      eventTypes: settings.eventTypes,
      rateLimitPerSecond: settings.rateLimitPerSecond ?? 0,
      secretId: secret.secretId,
      secret: sealed(secret.secret),
    },
  };
}

function adding(
  endpoints: readonly WebhookEndpointRecord[],
  endpointId: string,
  settings: WebhookEndpointSettings,
  secret: NewSecret,
): WebhookEventCase[] {
  if (!WEBHOOK_ENDPOINT_ID_PATTERN.test(endpointId))
    throw new DomainError('INVALID_ENDPOINT_ID', `not an endpoint id: ${endpointId}`);
  if (findEndpoint(endpoints, endpointId))
    throw new DomainError('WEBHOOK_ENDPOINT_EXISTS', `endpoint ${endpointId} exists`);
  if (endpoints.length >= MAX_WEBHOOK_ENDPOINTS)
    throw new DomainError(
      'WEBHOOK_ENDPOINT_LIMIT',
      `a company has at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints; remove one first`,
    );
  return [configured(endpointId, checkSettings(settings), secret)];
}

function changing(endpoint: WebhookEndpointRecord, changes: Partial<WebhookEndpointSettings>) {
  const { endpointId, url, description, eventTypes, rateLimitPerSecond } = endpoint;
  const before: WebhookEndpointSettings = { url, description, eventTypes, rateLimitPerSecond };
  const after = checkSettings({ ...before, ...changes });
  const same =
    after.url === before.url &&
    after.description === before.description &&
    after.rateLimitPerSecond === before.rateLimitPerSecond &&
    after.eventTypes.join('\n') === before.eventTypes.join('\n');
  const secret = currentSecret(endpoint);
  if (same || !secret) return [];
  return [configured(endpointId, after, secret)];
}

/** What a command about endpoints does to the company's endpoints. */
export function decideWebhook(
  command: WebhookCommand,
  endpoints: readonly WebhookEndpointRecord[],
): WebhookEventCase[] {
  switch (command.type) {
    case 'ConfigureWebhook': {
      const legacy = findEndpoint(endpoints, LEGACY_WEBHOOK_ENDPOINT_ID);
      if (legacy) return changing(legacy, { url: command.url });
      const settings = { url: command.url, description: '', eventTypes: [] };
      return adding(endpoints, LEGACY_WEBHOOK_ENDPOINT_ID, settings, command.newSecret);
    }
    case 'AddWebhookEndpoint': {
      const events = adding(endpoints, command.endpointId, command.settings, command.newSecret);
      if (command.enabled) return events;
      const reason = 'added disabled';
      return [
        ...events,
        {
          $case: 'webhookEndpointDisabled',
          value: { endpointId: command.endpointId, reason, automatic: false },
        },
      ];
    }
    case 'ChangeWebhookEndpoint':
      return changing(endpointOf(endpoints, command.endpointId), command.changes);
    case 'RemoveWebhookEndpoint': {
      const { endpointId } = endpointOf(endpoints, command.endpointId);
      return [{ $case: 'webhookEndpointRemoved', value: { endpointId } }];
    }
    case 'RotateWebhookSecret': {
      const endpoint = endpointOf(endpoints, command.endpointId);
      const current = currentSecret(endpoint);
      if (!current) throw new DomainError('WEBHOOK_NOT_CONFIGURED', 'the endpoint has no signing secret');
      return [
        {
          $case: 'webhookSecretRotated',
          value: {
            endpointId: endpoint.endpointId,
            secretId: command.secretId,
            secret: sealed(command.secret),
            previousSecretId: current.secretId,
            previousSecretExpiresAt: new Date(command.previousExpiresAt),
          },
        },
      ];
    }
    case 'DisableWebhook': {
      const endpoint = endpointOf(endpoints, command.endpointId);
      if (!endpoint.enabled) return [];
      const value = {
        endpointId: endpoint.endpointId,
        reason: command.reason,
        automatic: !!command.automatic,
      };
      return [{ $case: 'webhookEndpointDisabled', value }];
    }
    case 'EnableWebhook': {
      const endpoint = endpointOf(endpoints, command.endpointId);
      if (endpoint.enabled) return [];
      return [{ $case: 'webhookEndpointEnabled', value: { endpointId: endpoint.endpointId } }];
    }
  }
}

/** Replaces the endpoint with this id, or adds it: ep_default first, the others in the order they were added. */
function put(endpoints: readonly WebhookEndpointRecord[], endpoint: WebhookEndpointRecord) {
  if (findEndpoint(endpoints, endpoint.endpointId))
    return endpoints.map((e) => (e.endpointId === endpoint.endpointId ? endpoint : e));
  return endpoint.endpointId === LEGACY_WEBHOOK_ENDPOINT_ID
    ? [endpoint, ...endpoints]
    : [...endpoints, endpoint];
}

function updated(
  endpoints: readonly WebhookEndpointRecord[],
  endpointId: string,
  change: (endpoint: WebhookEndpointRecord) => WebhookEndpointRecord,
) {
  const endpoint = findEndpoint(endpoints, endpointId);
  return endpoint ? put(endpoints, change(endpoint)) : [...endpoints];
}

/** The endpoints after one more of their events (pure: live updates and rebuilds share it). */
export function evolveWebhook(
  endpoints: readonly WebhookEndpointRecord[],
  event: WebhookEventCase,
  at: string,
): WebhookEndpointRecord[] {
  switch (event.$case) {
    case 'webhookEndpointConfigured': {
      const v = event.value;
      const endpointId = endpointIdOf(v.endpointId);
      const before = findEndpoint(endpoints, endpointId);
      // An unchanged secret id keeps the secrets (and those rotating out); another is the only one.
      const secrets = before?.secrets.some((s) => s.secretId === v.secretId)
        ? before.secrets
        : [{ secretId: v.secretId, secret: unsealed(v.secret), createdAt: at }];
      // Kept as given: a type a newer build added stays subscribed, and receives nothing here.
      return put(endpoints, {
        endpointId,
        url: v.url,
        description: v.description,
        eventTypes: [...v.eventTypes],
        ...(v.rateLimitPerSecond ? { rateLimitPerSecond: v.rateLimitPerSecond } : {}),
        enabled: before?.enabled ?? true,
        ...(before?.disabledReason !== undefined ? { disabledReason: before.disabledReason } : {}),
        ...(before?.disabledAutomatically ? { disabledAutomatically: true } : {}),
        secrets,
      });
    }
    case 'webhookSecretRotated': {
      const v = event.value;
      const expiresAt = v.previousSecretExpiresAt?.toISOString() ?? at;
      return updated(endpoints, endpointIdOf(v.endpointId), (e) => ({
        ...e,
        secrets: [
          ...e.secrets
            .map((s) => (s.secretId === v.previousSecretId ? { ...s, expiresAt } : s))
            // Secrets that expired by now are gone for good.
            .filter((s) => !s.expiresAt || s.expiresAt > at),
          { secretId: v.secretId, secret: unsealed(v.secret), createdAt: at },
        ],
      }));
    }
    case 'webhookEndpointDisabled': {
      const v = event.value;
      return updated(endpoints, endpointIdOf(v.endpointId), (e) => ({
        ...e,
        enabled: false,
        disabledReason: v.reason,
        ...(v.automatic ? { disabledAutomatically: true } : {}),
      }));
    }
    case 'webhookEndpointEnabled':
      return updated(endpoints, endpointIdOf(event.value.endpointId), (e) => {
        const { disabledReason: _reason, disabledAutomatically: _automatic, ...rest } = e;
        return { ...rest, enabled: true };
      });
    case 'webhookEndpointRemoved':
      return endpoints.filter((e) => e.endpointId !== endpointIdOf(event.value.endpointId));
  }
}

/** Every endpoint's secrets, sealed again where `resealed` (by secret id, unique within a company) has them. */
export function resealedEndpoints(
  endpoints: readonly WebhookEndpointRecord[],
  resealed: ReadonlyMap<string, SealedSecret>,
): WebhookEndpointRecord[] {
  return endpoints.map((e) => ({
    ...e,
    secrets: e.secrets.map((s) => {
      const secret = resealed.get(s.secretId);
      return secret ? { ...s, secret } : s;
    }),
  }));
}

/** Every signing secret of every endpoint (secret ids are unique within a company). */
export const allWebhookSecrets = (endpoints: readonly WebhookEndpointRecord[]) =>
  endpoints.flatMap((e) => e.secrets);
