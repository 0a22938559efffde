// Where personal data may remain after a person is forgotten: every table of every service schema, and every
// event of every topic (decoded through the contracts codecs, and its bytes).
import pg from 'pg';
import { allTopics, type StreamRecord } from '@mds/contracts';
import { createKafkaClient, readToEnd } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import type { Stack } from './harness.js';

/** Rows of every table of every service schema whose text, or bytes, contain one of `needles`. */
export async function rowsHolding(stack: Stack, needles: readonly string[]): Promise<string[]> {
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const tables = await client.query<{ schema: string; table: string }>(
      `select table_schema as schema, table_name as "table" from information_schema.tables
       where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema', 'public')`,
    );
    const found: string[] = [];
    for (const { schema, table } of tables.rows) {
      const name = `${client.escapeIdentifier(schema)}.${client.escapeIdentifier(table)}`;
      const byteColumns = await client.query<{ column_name: string }>(
        `select column_name from information_schema.columns
         where table_schema = $1 and table_name = $2 and data_type = 'bytea'`,
        [schema, table],
      );
      for (const needle of needles) {
        const inBytes = byteColumns.rows.map(
          (c) =>
            `position(convert_to($1, 'UTF8') in coalesce(${client.escapeIdentifier(c.column_name)}, ''::bytea)) > 0`,
        );
        const where = [`strpos(t::text, $1) > 0`, ...inBytes].join(' or ');
        const count = await client.query<{ n: string }>(
          `select count(*) as n from ${name} t where ${where}`,
          [needle],
        );
        if (Number(count.rows[0]!.n) > 0) found.push(`${schema}.${table} holds "${needle}"`);
      }
    }
    return found;
  } finally {
    await client.end();
  }
}

/** Events of every topic whose decoded JSON, or bytes, contain one of `needles`. */
export async function eventsHolding(stack: Stack, needles: readonly string[]): Promise<string[]> {
  const logger = createLogger({ service: 'erasure-scan', level: 'silent' });
  const found: string[] = [];
  await readToEnd<StreamRecord>({
    kafka: createKafkaClient(
      { brokers: stack.infra.kafkaBrokers.split(','), clientId: 'erasure-scan' },
      logger,
    ),
    logger,
    topics: allTopics(),
    topicPrefix: stack.topicPrefix,
    handleBatch: (events) => {
      for (const e of events) {
        const json = JSON.stringify(e.spec.codec.toJSON(e.record));
        const bytes = Buffer.from(e.spec.codec.encode(e.record));
        for (const needle of needles)
          if (json.includes(needle) || bytes.includes(needle))
            found.push(`${e.topic} ${e.record.metadata.type} holds "${needle}"`);
      }
      return Promise.resolve();
    },
  });
  return found;
}
