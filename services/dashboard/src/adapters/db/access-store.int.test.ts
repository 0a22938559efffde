// The same rules of access as access.unit.test.ts, over the PostgreSQL AccessStore (a fresh database).
import { afterAll, beforeAll, describe } from 'vitest';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { createTestDatabase } from '@mds/local-infra/testing';
import { accessRules } from '../../../test/access-rules.js';
import { createAccessStore } from './access-store.js';
import { migrations, SCHEMA } from './migrations.js';

let db: Knex;
beforeAll(async () => {
  db = await openDatabase({ url: await createTestDatabase('access'), schema: SCHEMA });
  await migrateUp(db, SCHEMA, migrations);
});
afterAll(async () => {
  await db?.destroy();
});

describe('access over PostgreSQL', () => accessRules(() => createAccessStore(db)));
