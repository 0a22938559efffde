/** What the dashboard's API answers, as the pages use it. */

export type { Permission, Role } from '../../src/domain/roles.js';
export type { MessengerName } from '@mds/contracts/messengers';
export type {
  EndpointList,
  EndpointView,
  EndpointWithHealth,
  Overview,
  WebhookView,
} from '../../src/domain/views.js';
import type { Permission, Role } from '../../src/domain/roles.js';
import type { MessengerName } from '@mds/contracts/messengers';

export interface MemberView {
  member_id: string;
  email: string;
  name: string;
  role: Role;
  created_at: string;
  last_sign_in_at: string | null;
  active: boolean;
  locked: boolean;
}

export interface SessionView {
  member: MemberView;
  company: { company_id: string; name: string };
  csrf_token: string;
  permissions: Permission[];
  live_refresh_ms: number;
}

export interface MessageRow {
  message_id: string;
  state: 'new' | 'sent' | 'failed';
  messenger: MessengerName | null;
  bot_name: string | null;
  bot_id: string | null;
  chat_id: string | null;
  phone: string | null;
  api_key_id: string | null;
  error_code: string | null;
  attempts: number | null;
  accepted_at: string | null;
  routed_at: string | null;
  finished_at: string | null;
  sort_at: string;
  webhook_status: 'pending' | 'delivered' | 'failed' | null;
  webhook_attempts: number;
}

export interface TimelineEntry {
  event_id: string;
  type: string;
  at: string;
  producer: string;
  data: Record<string, unknown>;
}

export interface DeliveryRow {
  webhook_id: string;
  endpoint_id: string;
  subject_id: string;
  kind: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  url: string | null;
  last_attempt_at: string;
  next_attempt_at: string | null;
}

export interface BotView {
  bot_id: string;
  messenger: MessengerName;
  name: string;
  username: string;
  default: boolean;
  registered_at: string;
  last_update_at: string | null;
  last_update_type: string | null;
  last_hour: { sent: number; failed: number; rate_limited: number };
}

export interface KeyView {
  key_id: string;
  prefix: string;
  label: string;
  issued_at: string;
  revoked_at: string | null;
  /** When a rolled key stops working (its overlap); null: until revoked. */
  expires_at: string | null;
  /** The key this one was rolled from. */
  rolled_from: string | null;
  last_used_at: string | null;
  created_by: { email: string; name: string } | null;
  /** What the key may do at the API (legacy keys already show their effective scopes). */
  scopes: string[];
}

export interface ClientView {
  phone_number: string;
  exists: boolean;
  links: {
    messenger: MessengerName | null;
    bot_id: string;
    bot_name: string | null;
    chat_id: string;
    reachable: boolean;
    unreachable_reason: string | null;
    since: string;
  }[];
}

/** One request a key made to the public API (its request log). */
export interface ApiRequestView {
  at: string;
  /** "send", "change_phone", "client_check", "read_event" (a newer gateway may add others: shown as they are). */
  operation: string;
  status: number;
  event_id: string | null;
  request_id: string;
  duration_ms: number;
}
