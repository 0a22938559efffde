import { describe, expect, inject, it } from 'vitest';
import { ofKind, podTemplate, releaseProblems, schemaProblems, strictProblems } from './checks.js';
import { environments, lint, renderService, serviceValues } from './support.js';

const services = serviceValues();

describe.each(environments())('every service rendered for the $name environment', ({ file }) => {
  it.each(services.map((s) => [s.service.name, s] as const))(
    '%s: every manifest is valid against the Kubernetes API schemas and types, and the release holds together',
    async (_name, service) => {
      expect(
        await lint([service.file, file], service.service.devOnly ? { 'devOnly.allowed': 'true' } : {}),
      ).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
      const manifests = await renderService(service, file);
      const problems = (await Promise.all(manifests.map(schemaProblems))).flat();
      expect(problems).toEqual([]);
      const strict = strictProblems(inject('kubeStrict'), manifests);
      expect(strict.problems).toEqual([]);
      // Only custom resources lack a Go type; the Prometheus Operator's schemas and kafkaUserProblems check them above.
      expect(
        strict.unchecked.filter(
          (kind) =>
            !kind.startsWith('monitoring.coreos.com/') && kind !== 'kafka.strimzi.io/v1beta2/KafkaUser',
        ),
      ).toEqual([]);
      expect(releaseProblems(manifests)).toEqual([]);

      const kinds = manifests.map((m) => m.kind);
      for (const kind of ['Deployment', 'Service', 'ConfigMap']) expect(kinds).toContain(kind);
      if (!service.service.devOnly) expect(kinds).toContain('PodDisruptionBudget');
      if (service.autoscaling?.enabled) expect(kinds).toContain('HorizontalPodAutoscaler');
      if (service.deployStep?.enabled) {
        const [job] = ofKind(manifests, 'Job');
        expect(job?.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
        expect(podTemplate(job!).spec.containers[0]!.args).toEqual(['node', 'dist/deploy-step.js']);
      }
    },
  );
});

describe('one release per service', () => {
  it('gives every object of a release its own names and labels, so releases never touch each other', async () => {
    const [environment] = environments();
    const rendered = await Promise.all(services.map((s) => renderService(s, environment!.file)));
    const names = rendered.flatMap((manifests) => manifests.map((m) => `${m.kind}/${m.metadata.name}`));
    expect(new Set(names).size).toBe(names.length);
    rendered.forEach((manifests, i) => {
      for (const m of manifests) {
        expect(m.metadata.labels?.['app.kubernetes.io/instance']).toBe(services[i]!.service.name);
      }
    });
  });

  it('scales the gateway horizontally', async () => {
    const gateway = services.find((s) => s.service.name === 'gateway')!;
    const manifests = await renderService(gateway, environments()[0]!.file);
    const [hpa] = ofKind(manifests, 'HorizontalPodAutoscaler');
    expect(hpa?.spec).toMatchObject({
      scaleTargetRef: { kind: 'Deployment', name: 'gateway' },
      minReplicas: 2,
    });
  });
});
