import type { NextFunction, Request, Response } from 'express';
import { z } from 'zod';
import type { Logger } from '@mds/logging';

/** One field at fault: JSON Pointer into the request body, and what is wrong with it. */
export interface FieldError {
  pointer: string;
  detail: string;
  code?: string;
}

/**
 * An RFC 9457 problem: `type`, `title`, `status`, `detail`, plus our stable machine `code`, the field
 * `errors` and the request id. Thrown by handlers, written by `problemHandler`.
 */
export class Problem extends Error {
  override readonly name = 'Problem';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    readonly detail?: string,
    readonly errors?: FieldError[],
    readonly headers: Record<string, string> = {},
    readonly extra: Record<string, unknown> = {},
  ) {
    super(detail ?? title);
  }
}

/** The body writeProblem sends, as a zod schema for OpenAPI documents (RFC 9457 problem details and our `code`). */
export const problemBodySchema = z
  .looseObject({
    type: z.string().meta({ description: 'A URI naming the problem type.' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    code: z.string().meta({ description: 'Stable machine-readable code.' }),
    errors: z
      .array(z.object({ pointer: z.string(), detail: z.string(), code: z.string().optional() }))
      .optional()
      .meta({ description: 'The fields at fault, as JSON Pointers into the request body.' }),
    violated_policy: z
      .string()
      .optional()
      .meta({ description: 'On a 429: the limit that was met, e.g. `send-key` or `send-company`.' }),
    request_id: z.string().optional().meta({ description: 'The X-Request-Id of the request.' }),
  })
  .meta({
    id: 'Problem',
    description:
      'RFC 9457 problem details, with the stable `code` to act on. Ignore members you do not know.',
  });

/** An OpenAPI response of a problem body (for zod-openapi documents). */
export const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: problemBodySchema } },
});

/** An OpenAPI response of a JSON body (for zod-openapi documents). */
export const jsonResponse = (description: string, schema: z.ZodType) => ({
  description,
  content: { 'application/json': { schema } },
});

export const PROBLEM_TYPE_BASE = 'https://docs.mds.dev/problems/';

export function writeProblem(res: Response, problem: Problem): void {
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  res
    .status(problem.status)
    .type('application/problem+json')
    .json({
      type: `${PROBLEM_TYPE_BASE}${problem.code}`,
      title: problem.title,
      status: problem.status,
      ...(problem.detail ? { detail: problem.detail } : {}),
      code: problem.code,
      ...(problem.errors ? { errors: problem.errors } : {}),
      ...problem.extra,
      ...(res.locals.requestId ? { request_id: res.locals.requestId as string } : {}),
    });
}

const ISSUE_CODES: Record<string, string> = {
  invalid_type: 'invalid_type',
  too_big: 'too_long',
  too_small: 'too_short',
  invalid_format: 'invalid_format',
  invalid_value: 'invalid_value',
  not_multiple_of: 'invalid_value',
  invalid_union: 'invalid_value',
};

const pointerOf = (path: PropertyKey[]) =>
  `#/${path.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

/**
 * A zod failure as field errors with JSON Pointers (`#/buttons/0/url`) and stable codes of our own:
 * `required`, `unknown_field`, `invalid_type`, `too_long`, `too_short`, `invalid_format`, `invalid_value`,
 * or the code a custom check names (e.g. `invalid_phone_number`).
 */
export function fieldErrors(error: z.ZodError): FieldError[] {
  return error.issues.flatMap((issue): FieldError[] => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        pointer: pointerOf([...issue.path, key]),
        detail: `Unknown field "${key}"`,
        code: 'unknown_field',
      }));
    }
    const custom =
      issue.code === 'custom' ? (issue.params as { code?: string } | undefined)?.code : undefined;
    // Schemas word a missing value as "Required" (their error function sees the undefined input).
    const code =
      custom ?? (issue.message === 'Required' ? 'required' : (ISSUE_CODES[issue.code] ?? 'invalid'));
    return [{ pointer: pointerOf(issue.path), detail: issue.message, code }];
  });
}

export function validationProblem(error: z.ZodError, detail = 'The request body is not valid.'): Problem {
  return new Problem(422, 'validation_failed', 'Validation failed', detail, fieldErrors(error));
}

/** Parses with a zod schema or throws a 422 problem listing every field at fault. */
export function parseOr422<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationProblem(result.error);
  return result.data;
}

/**
 * The last middleware: problems as problem+json; body-parser's own errors (malformed JSON, too large)
 * as problems with their codes; anything else a 500 that tells nothing internal.
 */
export function problemHandler(logger: Logger) {
  return (error: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    if (error instanceof Problem) return writeProblem(res, error);
    const status = (error as { status?: number; type?: string }).status;
    const type = (error as { type?: string }).type;
    if (type === 'entity.parse.failed') {
      return writeProblem(
        res,
        new Problem(400, 'malformed_json', 'Malformed JSON', 'The request body is not valid JSON.'),
      );
    }
    if (type === 'entity.too.large') {
      return writeProblem(
        res,
        new Problem(
          413,
          'body_too_large',
          'Request body too large',
          'The request body is larger than allowed.',
        ),
      );
    }
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      return writeProblem(
        res,
        new Problem(415, 'unsupported_encoding', 'Unsupported encoding', String((error as Error).message)),
      );
    }
    if (status && status >= 400 && status < 500) {
      return writeProblem(res, new Problem(status, 'bad_request', 'Bad request', (error as Error).message));
    }
    logger.error({ err: error }, 'request failed');
    return writeProblem(
      res,
      new Problem(500, 'internal_error', 'Internal error', 'The server failed to handle the request.'),
    );
  };
}

/** 404 for every path no route matched, as a problem. */
export function notFoundHandler() {
  return (req: Request, res: Response) => {
    writeProblem(res, new Problem(404, 'not_found', 'Not found', `No route for ${req.method} ${req.path}.`));
  };
}
