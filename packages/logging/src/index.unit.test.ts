import { describe, expect, it } from 'vitest';
import { errorSummary, redactedUrl, withLogContext } from './index.js';
import { capturedLogger } from './testing.js';

const capture = () => capturedLogger('test-svc');

describe('createLogger', () => {
  it('writes JSON with service, level name and ISO time', () => {
    const { lines, logger } = capture();
    logger.info({ n: 1 }, 'hello');
    expect(lines[0]).toMatchObject({ service: 'test-svc', level: 'info', msg: 'hello', n: 1 });
    expect(String(lines[0]!.time)).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('adds the request and correlation ids of the current context, across awaits', async () => {
    const { lines, logger } = capture();
    await withLogContext({ requestId: 'r-1' }, async () => {
      await new Promise((r) => setTimeout(r, 1));
      await withLogContext({ correlationId: 'c-1' }, async () => {
        await Promise.resolve();
        logger.info('inside');
      });
    });
    logger.info('outside');
    expect(lines[0]).toMatchObject({ requestId: 'r-1', correlationId: 'c-1' });
    expect(lines[1]).not.toHaveProperty('requestId');
  });

  it('never writes API keys, tokens or secrets', () => {
    const { lines, logger } = capture();
    logger.info({ req: { headers: { 'x-api-key': 'k-secret', authorization: 'Bearer t' } } }, 'request');
    logger.info({ bot: { token: '123:ABC' }, webhook: { secret: 'whsec_x' }, apiKey: 'k2' }, 'things');
    const text = JSON.stringify(lines);
    for (const leaked of ['k-secret', 'Bearer t', '123:ABC', 'whsec_x', 'k2'])
      expect(text).not.toContain(leaked);
  });
});

describe('redactedUrl', () => {
  it('drops user info, query and fragment, and says a query was there', () => {
    expect(redactedUrl('https://user:pw@hooks.example.com:8443/in/x?token=t0k3n&a=1#frag')).toBe(
      'https://hooks.example.com:8443/in/x?[redacted]',
    );
    expect(redactedUrl('https://hooks.example.com/in')).toBe('https://hooks.example.com/in');
    expect(redactedUrl('not a url with secret')).toBe('[invalid url]');
  });
});

/** What pg reports for `insert ... values ($1, $2)` refused by a NOT NULL constraint, as knex rethrows it. */
function databaseError(o: { code: string; message: string; detail?: string; where?: string }) {
  const error = Object.assign(new Error(o.message), {
    name: 'error',
    length: 200,
    severity: 'ERROR',
    code: o.code,
    detail: o.detail,
    hint: undefined,
    position: undefined,
    internalQuery: undefined,
    where: o.where,
    schema: 'dashboard',
    table: 'messages',
    column: 'phone',
    dataType: undefined,
    constraint: undefined,
    file: 'execMain.c',
    line: '2006',
    routine: 'ExecConstraints',
  });
  // V8 fixed the stack's first line with pg's message; knex then prefixes the message with the SQL.
  void error.stack;
  error.message = `insert into "messages" ("phone", "text") values ($1, $2) - ${o.message}`;
  return error;
}

describe('errors in log lines', () => {
  it('keep the SQLSTATE, the schema names and the SQL, but no value a database error quotes', () => {
    const { lines, logger } = capture();
    logger.error(
      {
        err: databaseError({
          code: '23502',
          message: 'null value in column "phone" of relation "messages" violates not-null constraint',
          detail: 'Failing row contains (7f0c, +79123456789, secret text).',
        }),
      },
      'could not store',
    );
    logger.error(
      {
        err: databaseError({
          code: '22P02',
          message: 'invalid input syntax for type uuid: "+79123456789 secret text"',
          where: "unnamed portal parameter $1 = '...'",
        }),
      },
      'could not store',
    );
    const wrapped = new Error('batch failed', {
      cause: databaseError({
        code: '22P05',
        message: 'unsupported Unicode escape sequence',
        where: 'JSON data, line 1: {"text":"secret text',
      }),
    });
    logger.error({ err: wrapped }, 'could not store');
    const text = JSON.stringify(lines);
    for (const leaked of ['79123456789', 'secret text']) expect(text).not.toContain(leaked);
    expect(lines[0]!.err).toMatchObject({
      code: '23502',
      table: 'messages',
      column: 'phone',
      condition: 'integrity constraint violation',
      message:
        'insert into "messages" ("phone", "text") values ($1, $2) - null value in column "phone" of relation "messages" violates not-null constraint',
    });
    expect(lines[0]!.err).not.toHaveProperty('detail');
    expect((lines[1]!.err as { message: string }).message).toContain('for type uuid: "…"');
    expect(lines[1]!.err).not.toHaveProperty('where');
    expect((lines[2]!.err as { message: string }).message).toContain('unsupported Unicode escape sequence');
  });

  it('summarise an error for a stored reason by its class and code alone', () => {
    expect(
      errorSummary(
        databaseError({ code: '22P05', message: 'unsupported Unicode escape sequence', detail: 'x' }),
      ),
    ).toBe('DatabaseError 22P05 (data exception), schema dashboard, table messages, column phone');
    expect(
      errorSummary(Object.assign(new Error('connect ECONNREFUSED 10.0.0.1'), { code: 'ECONNREFUSED' })),
    ).toBe('Error ECONNREFUSED');
    expect(errorSummary(new TypeError('cannot read +79123456789'))).toBe('TypeError');
  });
});
