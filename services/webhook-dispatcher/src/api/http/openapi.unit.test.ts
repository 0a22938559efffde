import { describe, expect, it } from 'vitest';
import { operationsOf, redoclyLint, routesOf } from '@mds/service-kit/testing/openapi';
import { adminRouter } from './admin.js';
import { adminOpenApiDocument } from './openapi.js';

// The admin API's document (served at /admin/v1/openapi.json): valid, and complete for the router that serves it.
describe('the admin API document', () => {
  const document = adminOpenApiDocument() as { paths: Record<string, Record<string, unknown>> };

  it('passes Redocly CLI lint with no warning', () => {
    const lint = redoclyLint(document);
    expect(lint.status, lint.output).toBe(0);
    expect(lint.output).not.toMatch(/warning/i);
  }, 60_000);

  it('documents every route of the admin router, and nothing else', () => {
    const router = adminRouter({
      store: undefined as never,
      adminToken: 'x',
      dashboardKeys: [],
      now: () => new Date(),
      poke: () => {},
      endpoints: async () => [],
      freshEndpoints: async () => [],
      sendTest: async () => 'no_endpoints' as const,
    });
    const routes = routesOf(router).filter((r) => r !== 'GET /openapi.json');
    expect(operationsOf(document).sort()).toEqual(routes.sort());
  });
});
