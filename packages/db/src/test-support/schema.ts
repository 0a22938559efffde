import { testInfra, uniqueName } from '@mds/local-infra/testing';
import { migrateUp, openDatabase, type Knex, type Migration } from '../index.js';

export interface TestSchema {
  db: Knex;
  schema: string;
  /** Drops the schema and closes the pool. */
  drop(): Promise<void>;
}

/** A fresh schema on the test run's database with `migrations` applied: one per test file. */
export async function migratedTestSchema(
  prefix: string,
  migrations: readonly Migration[],
): Promise<TestSchema> {
  const schema = uniqueName(prefix).toLowerCase();
  const db = await openDatabase({ url: testInfra().databaseUrl, schema });
  await migrateUp(db, schema, migrations);
  return {
    db,
    schema,
    async drop() {
      await db.raw('drop schema if exists ?? cascade', [schema]);
      await db.destroy();
    },
  };
}
