import type { Knex } from '@mds/db';

/** Whom the dashboard acts for in a call to another service: a member (or the operator) of one company. */
export interface Actor {
  company_id: string;
  member_id: string;
  role: string;
}
import type { JsonClient } from '../../adapters/services/http-json.js';
import type { Access } from '../../application/access.js';
import type { CookieSettings } from './session.js';

/** What the dashboard's API routes act with. */
export interface ApiDeps {
  db: Knex;
  access: Access;
  /**
   * client-registry's admin API (/admin/v1) as the dashboard acting for one member of one company: every call
   * carries an assertion signed for that company, and the registry refuses any other company's path.
   */
  registry: (actor: Actor) => JsonClient;
  /** webhook-dispatcher's admin API (/admin/v1), likewise for one company. */
  dispatcher: (actor: Actor) => JsonClient;
  /**
   * The public API (/api/v1) as the dashboard acting for one member: the gateway takes the assertion instead of
   * an API key and records the request as the member's (key id `dashboard:<member_id>`).
   */
  gateway: (actor: Actor) => JsonClient;
  cookies: CookieSettings;
  publicUrl: string;
  liveRefreshMs: number;
  now: () => Date;
}
