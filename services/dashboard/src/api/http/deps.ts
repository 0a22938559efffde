import type { Knex } from '@mds/db';
import type { JsonClient } from '../../adapters/services/http-json.js';
import type { Access } from '../../application/access.js';
import type { CookieSettings } from './session.js';

/** What the dashboard's API routes act with. */
export interface ApiDeps {
  db: Knex;
  access: Access;
  /** client-registry's admin API (/admin/v1). */
  registry: JsonClient;
  /** webhook-dispatcher's admin API (/admin/v1). */
  dispatcher: JsonClient;
  /** The public API (/api/v1). */
  gateway: JsonClient;
  cookies: CookieSettings;
  publicUrl: string;
  liveRefreshMs: number;
  now: () => Date;
}
