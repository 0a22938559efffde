// What may be said of an error without the personal data it can carry. A PostgreSQL error quotes the row it
// refused: `detail` ("Failing row contains (..., +79123456789, hello)", "Key (phone)=(...) already exists"),
// `where` ("JSON data, line 1: {"text":"..."), `internalQuery`, and for some codes the message itself
// (`invalid input syntax for type uuid: "..."`). Those go; the SQLSTATE, the names of the table, column,
// constraint and type, and the SQL (knex's, with placeholders for values) stay.
import { pino } from 'pino';

/** Fields of a PostgreSQL error (pg's DatabaseError) that quote values; dropped from logs and reasons. */
const VALUE_FIELDS = ['detail', 'where', 'hint', 'internalQuery', 'parameters', 'bindings'] as const;

/** Fields of a PostgreSQL error that name schema objects, never values. */
const NAME_FIELDS = ['schema', 'table', 'column', 'dataType', 'constraint'] as const;

const CLASSES: Record<string, string> = {
  '08': 'connection exception',
  '22': 'data exception',
  '23': 'integrity constraint violation',
  '25': 'invalid transaction state',
  '40': 'transaction rollback',
  '42': 'syntax error or access rule violation',
  '53': 'insufficient resources',
  '54': 'program limit exceeded',
  '55': 'object not in prerequisite state',
  '57': 'operator intervention',
  '58': 'system error',
  XX: 'internal error',
};

export interface DatabaseErrorLike extends Error {
  code: string;
  severity: string;
}

/** A PostgreSQL error as pg reports it: a severity and a five-character SQLSTATE. */
export function isDatabaseError(error: unknown): error is DatabaseErrorLike {
  if (!(error instanceof Error)) return false;
  const e = error as Partial<DatabaseErrorLike>;
  return typeof e.severity === 'string' && typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code);
}

/** "data exception" for 22P05: the class a SQLSTATE belongs to. */
export function sqlStateClass(code: string): string {
  return CLASSES[code.slice(0, 2)] ?? `class ${code.slice(0, 2)}`;
}

/** A name as knex quotes it in SQL, or PostgreSQL in a message: "messages", "company_id". */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/;

/**
 * A message of a PostgreSQL error (knex prefixes it with the statement's SQL, values as placeholders) with the
 * values it quotes replaced: a quoted span after ": " or "value " (`invalid input syntax for type uuid:
 * "+7912..."`, `value "..." is out of range`), or one that is no identifier, becomes "…"; the names of tables,
 * columns and constraints, in the SQL and in the message, stay.
 */
function redactQuoted(message: string, names: ReadonlySet<string>): string {
  return message.replace(/"((?:[^"]|"")*)"/g, (whole: string, inner: string, at: number) => {
    if (names.has(inner)) return whole;
    const before = message.slice(Math.max(0, at - 6), at);
    const quotesAValue = before.endsWith(': ') || before.endsWith('value ');
    return !quotesAValue && IDENTIFIER.test(inner) ? whole : '"…"';
  });
}

function namesOf(error: DatabaseErrorLike): Set<string> {
  const record = error as unknown as Record<string, unknown>;
  return new Set(NAME_FIELDS.map((f) => record[f]).filter((v): v is string => typeof v === 'string'));
}

/**
 * One line that says what went wrong without any value from the data: the error's class, and for a
 * PostgreSQL error its SQLSTATE, the class of it and the schema objects it names. Dead-letter reasons use it.
 */
export function errorSummary(error: unknown): string {
  if (!(error instanceof Error))
    return typeof error === 'string' ? 'a thrown string' : `a thrown ${typeof error}`;
  const type =
    error.constructor?.name && error.constructor.name !== 'Object' ? error.constructor.name : error.name;
  if (!isDatabaseError(error)) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' || typeof code === 'number' ? `${type} ${code}` : type;
  }
  const record = error as unknown as Record<string, unknown>;
  const named = NAME_FIELDS.filter((f) => typeof record[f] === 'string').map(
    (f) => `${f} ${String(record[f])}`,
  );
  return [`DatabaseError ${error.code} (${sqlStateClass(error.code)})`, ...named].join(', ');
}

const stdErr = pino.stdSerializers.err;

/**
 * pino's error serializer, made safe for errors that quote data: a PostgreSQL error loses the fields that
 * quote the row and the values quoted in its message and stack; causes and aggregated errors alike.
 */
export function safeErrorSerializer(error: unknown): unknown {
  if (!(error instanceof Error)) return stdErr(error as Error);
  const serialized = stdErr(error) as unknown as Record<string, unknown>;
  delete serialized.raw;
  scrub(error, serialized);
  const aggregate = (error as { errors?: unknown }).errors;
  if (Array.isArray(aggregate)) serialized.aggregateErrors = aggregate.map(safeErrorSerializer);
  return serialized;
}

/** Removes what quotes data from a serialized error, for the error and each of its causes. */
function scrub(error: Error, serialized: Record<string, unknown>): void {
  const names = new Set<string>();
  let quotesData = false;
  let e: unknown = error;
  for (let depth = 0; e instanceof Error && depth < 10; depth++, e = (e as { cause?: unknown }).cause) {
    if (!isDatabaseError(e)) continue;
    quotesData = true;
    for (const name of namesOf(e)) names.add(name);
    if (e === error) {
      for (const field of VALUE_FIELDS) delete serialized[field];
      serialized.condition = sqlStateClass(e.code);
    }
  }
  if (!quotesData) return;
  if (typeof serialized.message === 'string') serialized.message = redactQuoted(serialized.message, names);
  if (typeof serialized.stack === 'string')
    // The messages in it (each error's first line, and the causes'), not the frames.
    serialized.stack = serialized.stack
      .split('\n')
      .map((line) => (/^\s+at /.test(line) ? line : redactQuoted(line, names)))
      .join('\n');
}
