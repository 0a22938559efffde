import { describe, expect, it } from 'vitest';
import type { z } from '@mds/config';
import { containerEnv, envProblems, ofKind, podTemplate, requiredVariables } from './checks.js';
import { environments, renderService, serviceValues, type ServiceValues } from './support.js';

/**
 * A service's zod config schema, from its package: by convention the `configSchema` export of
 * `<package>/config` (and `deployStepConfigSchema` for its deploy step), so a new service is checked as soon
 * as its values file names its package.
 */
async function configSchemas(service: ServiceValues): Promise<{ main: z.ZodType; deployStep?: z.ZodType }> {
  const module = service.service.configModule ?? `${service.service.package}/config`;
  const exports = (await import(module)) as Record<string, z.ZodType | undefined>;
  const main = exports[service.service.configExport ?? 'configSchema'];
  if (!main) throw new Error(`${module} exports no ${service.service.configExport ?? 'configSchema'}`);
  return { main, ...(exports.deployStepConfigSchema ? { deployStep: exports.deployStepConfigSchema } : {}) };
}

const services = serviceValues();

describe.each(environments())('environment variables, $name environment', ({ file }) => {
  it.each(services.map((s) => [s.service.name, s] as const))(
    '%s: the chart sets every variable its config schema requires, and only variables it knows',
    async (name, service) => {
      const schemas = await configSchemas(service);
      const manifests = await renderService(service, file);
      const [deployment] = ofKind(manifests, 'Deployment');
      const container = podTemplate(deployment!).spec.containers[0]!;
      expect(envProblems(`${name} Deployment`, containerEnv(container, manifests), schemas.main)).toEqual([]);

      const [job] = ofKind(manifests, 'Job');
      if (service.deployStep?.enabled) {
        expect(
          schemas.deployStep,
          `${service.service.package}/config exports no deployStepConfigSchema`,
        ).toBeDefined();
        const step = podTemplate(job!).spec.containers[0]!;
        expect(
          envProblems(`${name} deploy step`, containerEnv(step, manifests), schemas.deployStep!),
        ).toEqual([]);
      } else {
        expect(job).toBeUndefined();
      }
    },
  );
});

describe('the config schemas the check reads', () => {
  it('name what the services cannot start without', async () => {
    const registry = await configSchemas(services.find((s) => s.service.name === 'client-registry')!);
    expect(requiredVariables(registry.main)).toEqual([
      'DATABASE_URL',
      'KAFKA_BROKERS',
      'REGISTRY_ADMIN_TOKEN',
      'REGISTRY_ENCRYPTION_KEYS',
    ]);
    expect(requiredVariables(registry.deployStep!)).toEqual(['DATABASE_URL', 'KAFKA_BROKERS']);
  });
});
