import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiResponsesObject } from 'zod-openapi';
import { problemResponse } from '@mds/service-kit';

// What the admin API's OpenAPI document (openapi.ts, openapi-webhook.ts) says of every operation.

export const companyId = z.object({
  companyId: z.string().meta({ description: 'The company_id (a UUID).' }),
});
export function op(
  operationId: string,
  tag: string,
  summary: string,
  responses: ZodOpenApiResponsesObject,
  extra: Partial<ZodOpenApiOperationObject> = {},
): ZodOpenApiOperationObject {
  return {
    operationId,
    tags: [tag],
    summary,
    security: [{ AdminToken: [] }],
    ...extra,
    responses: {
      ...responses,
      '401': problemResponse('No or a wrong `Authorization: Bearer <REGISTRY_ADMIN_TOKEN>`.'),
    },
  };
}
export const body = (schema: z.ZodType) => ({ required: true, content: { 'application/json': { schema } } });
export const notFound = problemResponse('No such company (`company_not_found`), key, or bot.');
export const invalid = problemResponse('The body breaks its schema (`validation_failed`, with `errors`).');
