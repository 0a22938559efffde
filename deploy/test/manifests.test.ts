import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { ofKind, podTemplate, releaseProblems, schemaProblems, strictProblems } from './checks.js';
import { environments, examplesDir, lint, render, renderService, serviceValues } from './support.js';

const services = serviceValues();
const gateway = services.find((s) => s.service.name === 'gateway')!;
const dashboard = services.find((s) => s.service.name === 'dashboard')!;
/** Kinds without a Go type in kube-strict, which their own schemas check (schemaProblems). */
const CUSTOM_RESOURCES = /^(monitoring\.coreos\.com\/|kafka\.strimzi\.io\/v1beta2\/KafkaUser$)/;

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
      expect(strict.unchecked.filter((kind) => !CUSTOM_RESOURCES.test(kind))).toEqual([]);
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

describe('the deploy-step Job', () => {
  it.each(services.filter((s) => s.deployStep?.enabled).map((s) => [s.service.name, s] as const))(
    "%s: its pods are not the service's: no Deployment, PodDisruptionBudget, Service or autoscaler selects them",
    async (_name, service) => {
      const manifests = await renderService(service, environments()[0]!.file, {
        'autoscaling.enabled': 'true',
      });
      const [job] = ofKind(manifests, 'Job');
      const labels = podTemplate(job!).metadata!.labels!;
      expect(labels['app.kubernetes.io/component']).toBe('deploy-step');
      expect(labels['app.kubernetes.io/instance']).toBe(service.service.name);
      const [deployment] = ofKind(manifests, 'Deployment');
      const [pdb] = ofKind(manifests, 'PodDisruptionBudget');
      const [hpa] = ofKind(manifests, 'HorizontalPodAutoscaler');
      const [svc] = ofKind(manifests, 'Service');
      const selects = (selector: Record<string, string>) =>
        Object.entries(selector).every(([key, value]) => labels[key] === value);
      const deploymentSelector = (deployment!.spec as { selector: { matchLabels: Record<string, string> } })
        .selector.matchLabels;
      expect(selects(deploymentSelector)).toBe(false);
      expect(
        selects((pdb!.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels),
      ).toBe(false);
      expect(selects((svc!.spec as { selector: Record<string, string> }).selector)).toBe(false);
      // The autoscaler counts the pods of the Deployment it scales: those its selector finds.
      expect((hpa!.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name).toBe(
        deployment!.metadata.name,
      );
      // ... and the service's own pods still are selected.
      const podLabels = podTemplate(deployment!).metadata!.labels!;
      expect(Object.entries(deploymentSelector).every(([key, value]) => podLabels[key] === value)).toBe(true);
      expect(releaseProblems(manifests)).toEqual([]);
    },
  );
});

describe('exposing the gateway (deploy/values/examples/expose/gateway.yaml)', () => {
  const expose = join(examplesDir, 'expose', 'gateway.yaml');
  const environment = environments().find((e) => e.name === 'environment')!.file;

  it('renders an Ingress and an HTTPRoute to the gateway Service, valid against their schemas, /api only', async () => {
    expect(await lint([gateway.file, environment, expose])).toMatch(
      /1 chart\(s\) linted, 0 chart\(s\) failed/,
    );
    const manifests = await render('gateway', [gateway.file, environment, expose]);
    expect((await Promise.all(manifests.map(schemaProblems))).flat()).toEqual([]);
    const strict = strictProblems(inject('kubeStrict'), manifests);
    expect(strict.problems).toEqual([]);
    expect(strict.unchecked.filter((kind) => !CUSTOM_RESOURCES.test(kind))).toEqual([]);
    // The HTTPRoute is decoded into the Gateway API's own Go types too (sigs.k8s.io/gateway-api).
    expect(strict.unchecked).not.toContain('gateway.networking.k8s.io/v1/HTTPRoute');
    expect(releaseProblems(manifests)).toEqual([]);

    const [config] = ofKind(manifests, 'ConfigMap');
    expect((config?.data as Record<string, string>).TRUST_PROXY).toBe('10.244.0.0/16');
    const [ingress] = ofKind(manifests, 'Ingress');
    expect(ingress?.spec).toMatchObject({
      ingressClassName: 'nginx',
      rules: [
        {
          host: 'api.messenger-delivery.example.com',
          http: {
            paths: [
              {
                path: '/api',
                pathType: 'Prefix',
                backend: { service: { name: 'gateway', port: { name: 'http' } } },
              },
            ],
          },
        },
      ],
      tls: [{ secretName: 'api-messenger-delivery-tls' }],
    });
    const [route] = ofKind(manifests, 'HTTPRoute');
    expect(route?.spec).toEqual({
      parentRefs: [{ name: 'public', namespace: 'gateway-system', sectionName: 'https' }],
      hostnames: ['api.messenger-delivery.example.com'],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/api' } }],
          backendRefs: [{ name: 'gateway', port: 8080 }],
        },
      ],
    });
  });

  it("refuses to render either without trustedProxies (every client would share the proxy's address)", async () => {
    for (const service of [gateway, dashboard]) {
      await expect(
        render(service.service.name, [service.file, environment, expose], { trustedProxies: '' }),
      ).rejects.toThrow(/trustedProxies is required with ingress.enabled/);
      await expect(
        render(service.service.name, [service.file, environment, expose], {
          trustedProxies: '',
          'ingress.enabled': 'false',
        }),
      ).rejects.toThrow(/trustedProxies is required with httpRoute.enabled/);
    }
  });

  it("exposes the dashboard's web port only: its operator API is a Service port for the namespace", async () => {
    const manifests = await render('dashboard', [dashboard.file, environment, expose]);
    const [ingress] = ofKind(manifests, 'Ingress');
    expect(JSON.stringify(ingress?.spec)).not.toContain('operator');
    const [service] = ofKind(manifests, 'Service');
    expect((service?.spec as { type: string; ports: { name: string; port: number }[] }).type).toBe(
      'ClusterIP',
    );
    expect((service?.spec as { ports: { name: string; port: number }[] }).ports).toContainEqual(
      expect.objectContaining({ name: 'operator', port: 8086 }),
    );
    const [config] = ofKind(manifests, 'ConfigMap');
    expect(config?.data as Record<string, string>).toMatchObject({
      OPERATOR_PORT: '8086',
      OPERATOR_HOST: '0.0.0.0',
    });
    const [policy] = ofKind(manifests, 'NetworkPolicy');
    const rules = (policy?.spec as { ingress: { ports: { port: number }[]; from?: unknown[] }[] }).ingress;
    const operator = rules.find((r) => r.ports.some((p) => p.port === 8086));
    expect(operator?.from).toEqual([{ podSelector: {} }]);
  });

  it('renders neither by default, and says what is missing when one is on without its hosts or Gateway', async () => {
    const kinds = (await render('gateway', [gateway.file, environment])).map((m) => m.kind);
    expect(kinds).not.toContain('Ingress');
    expect(kinds).not.toContain('HTTPRoute');
    await expect(
      render('gateway', [gateway.file, environment], { 'ingress.enabled': 'true', trustedProxies: '1' }),
    ).rejects.toThrow(/ingress.hosts is required with ingress.enabled/);
    await expect(
      render('gateway', [gateway.file, environment], { 'httpRoute.enabled': 'true', trustedProxies: '1' }),
    ).rejects.toThrow(/httpRoute.parentRefs is required with httpRoute.enabled/);
    await expect(render('gateway', [gateway.file, environment], { 'ingress.host': 'x' })).rejects.toThrow(
      /additional properties 'host' not allowed|host/,
    );
  });
});

describe('pod settings an operator overrides through values', () => {
  it('reach the service pods and the deploy-step Job alike: security contexts, scheduling, annotations; extra env and volumes the service', async () => {
    const environment = environments().find((e) => e.name === 'environment')!.file;
    const manifests = await renderService(gateway, environment, {
      'podSecurityContext.runAsUser': 'null',
      'podSecurityContext.runAsGroup': 'null',
      'podSecurityContext.fsGroup': 'null',
      'containerSecurityContext.runAsNonRoot': 'true',
      'nodeSelector.pool': 'mds',
      'tolerations[0].key': 'dedicated',
      'tolerations[0].operator': 'Equal',
      'tolerations[0].value': 'mds',
      'tolerations[0].effect': 'NoSchedule',
      'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key':
        'zone',
      'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator':
        'Exists',
      priorityClassName: 'mds-critical',
      'podAnnotations.sidecar\\.istio\\.io/inject': 'false',
      'deploymentAnnotations.owner': 'platform',
      'extraEnv[0].name': 'NODE_OPTIONS',
      'extraEnv[0].value': '--max-old-space-size=256',
      'extraVolumes[0].name': 'certs',
      'extraVolumes[0].secret.secretName': 'mds-certs',
      'extraVolumeMounts[0].name': 'certs',
      'extraVolumeMounts[0].mountPath': '/etc/mds/certs',
    });
    expect((await Promise.all(manifests.map(schemaProblems))).flat()).toEqual([]);
    expect(strictProblems(inject('kubeStrict'), manifests).problems).toEqual([]);
    expect(releaseProblems(manifests)).toEqual([]);
    const [deployment] = ofKind(manifests, 'Deployment');
    const [job] = ofKind(manifests, 'Job');
    expect(deployment!.metadata.annotations).toEqual({ owner: 'platform' });
    for (const workload of [deployment!, job!]) {
      const template = podTemplate(workload) as unknown as {
        metadata: { annotations?: Record<string, string> };
        spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
      };
      const where = workload.kind;
      expect(template.metadata.annotations?.['sidecar.istio.io/inject'], where).toBe('false');
      expect(template.spec.securityContext, where).toEqual({
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(template.spec.containers[0]!.securityContext, where).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(template.spec.nodeSelector, where).toEqual({ pool: 'mds' });
      expect(template.spec.tolerations, where).toEqual([
        { key: 'dedicated', operator: 'Equal', value: 'mds', effect: 'NoSchedule' },
      ]);
      expect(template.spec.affinity, where).toMatchObject({ nodeAffinity: {} });
      expect(template.spec.priorityClassName, where).toBe('mds-critical');
    }
    const container = podTemplate(deployment!).spec.containers[0]! as unknown as {
      env: { name: string; value?: string }[];
      volumeMounts: { name: string; mountPath: string }[];
    };
    expect(container.env.at(-1)).toEqual({ name: 'NODE_OPTIONS', value: '--max-old-space-size=256' });
    expect(container.volumeMounts).toContainEqual({ name: 'certs', mountPath: '/etc/mds/certs' });
    expect(podTemplate(deployment!).spec.volumes).toContainEqual({
      name: 'certs',
      secret: { secretName: 'mds-certs' },
    });
  });

  it('keeps the hardened security contexts by default', async () => {
    const manifests = await renderService(gateway, environments()[0]!.file);
    for (const workload of [...ofKind(manifests, 'Deployment'), ...ofKind(manifests, 'Job')]) {
      const spec = podTemplate(workload).spec as unknown as {
        securityContext: unknown;
        containers: { securityContext: unknown }[];
      };
      expect(spec.securityContext).toEqual({
        runAsNonRoot: true,
        runAsUser: 1000,
        runAsGroup: 1000,
        fsGroup: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(spec.containers[0]!.securityContext).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
    }
  });
});
