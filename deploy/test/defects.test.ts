// The checks fail on real defects: each test breaks one thing and expects it reported.
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import {
  containerEnv,
  envProblems,
  ofKind,
  podTemplate,
  releaseProblems,
  schemaProblems,
  strictProblems,
} from './checks.js';
import { environments, examplesDir, render, renderService, serviceValues, type Manifest } from './support.js';

const services = serviceValues();
const registry = services.find((s) => s.service.name === 'client-registry')!;
const gateway = services.find((s) => s.service.name === 'gateway')!;
const simulator = services.find((s) => s.service.name === 'messenger-simulator')!;
const telegramSender = services.find((s) => s.service.name === 'telegram-sender')!;
const dispatcher = services.find((s) => s.service.name === 'webhook-dispatcher')!;
const strimzi = environments().find((e) => e.name === 'strimzi')!.file;

async function deploymentEnvProblems(
  service: typeof registry,
  set: Record<string, string>,
): Promise<string[]> {
  const { configSchema } = (await import(`${service.service.package}/config`)) as {
    configSchema: Parameters<typeof envProblems>[2];
  };
  const manifests = await renderService(service, strimzi, set);
  const container = podTemplate(ofKind(manifests, 'Deployment')[0]!).spec.containers[0]!;
  return envProblems(service.service.name, containerEnv(container, manifests), configSchema);
}

const clone = <T>(value: T): T => structuredClone(value);

describe('schema validation', () => {
  it('reports a Deployment without its selector, a container without a name, and a wrongly typed field', async () => {
    const manifests = await renderService(gateway, strimzi);
    const deployment = clone(ofKind(manifests, 'Deployment')[0]!) as Manifest & {
      spec: {
        selector?: unknown;
        replicas?: unknown;
        template: { spec: { containers: { name?: string }[] } };
      };
    };
    delete deployment.spec.selector;
    delete deployment.spec.template.spec.containers[0]!.name;
    deployment.spec.replicas = 'two';
    const problems = (await schemaProblems(deployment)).join('\n');
    expect(problems).toMatch(/selector/);
    expect(problems).toMatch(/containers\/0.*name/);
    expect(problems).toMatch(/replicas/);
  });

  it('reports a misspelt field and a wrongly typed value, as the API server would on apply', async () => {
    const manifests = clone(await renderService(gateway, strimzi));
    const container = podTemplate(ofKind(manifests, 'Deployment')[0]!).spec
      .containers[0]! as unknown as Record<string, unknown>;
    container.readinesProbe = container.readinessProbe;
    delete container.readinessProbe;
    const pdb = ofKind(manifests, 'PodDisruptionBudget')[0]!;
    (pdb.spec as Record<string, unknown>).minAvailable = { percent: 50 };
    const { problems } = strictProblems(inject('kubeStrict'), manifests);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^PodDisruptionBudget gateway: .*minAvailable/);
    expect(problems[1]).toMatch(
      /^Deployment gateway: unknown field "spec.template.spec.containers\[0\].readinesProbe"/,
    );
  });

  it('reports a kind it has no schema for instead of passing it unchecked', async () => {
    expect(
      await schemaProblems({ apiVersion: 'apps/v1', kind: 'Deploymnet', metadata: { name: 'x' } }),
    ).toEqual(['Deploymnet x: no schema for apps/v1 Deploymnet']);
    expect(
      await schemaProblems({ apiVersion: 'example.com/v1', kind: 'Thing', metadata: { name: 'x' } }),
    ).toEqual(['Thing x: no schema for apiVersion example.com/v1']);
  });
});

describe('environment coverage', () => {
  it('reports a required variable the chart does not set', async () => {
    expect(await deploymentEnvProblems(registry, { 'secretEnv.REGISTRY_ADMIN_TOKEN': 'null' })).toEqual([
      'client-registry: required REGISTRY_ADMIN_TOKEN is not set by the chart',
    ]);
  });

  it('reports a required variable taken from an optional Secret (the pod would start without it)', async () => {
    expect(
      await deploymentEnvProblems(registry, {
        'secretEnv.REGISTRY_ADMIN_TOKEN.secret': 'mds-client-registry',
        'secretEnv.REGISTRY_ADMIN_TOKEN.key': 'admin-token',
        'secretEnv.REGISTRY_ADMIN_TOKEN.optional': 'true',
      }),
    ).toEqual([
      'client-registry: required REGISTRY_ADMIN_TOKEN comes from an optional Secret (the pod would start without it)',
    ]);
  });

  it('reports a variable the service does not know (a typo would fall back to a default)', async () => {
    expect(
      await deploymentEnvProblems(gateway, { 'env.REGISTRY_GRPC_ADRESS': 'client-registry:50051' }),
    ).toEqual(["gateway: sets REGISTRY_GRPC_ADRESS, which the service's config schema does not know"]);
  });

  it('reports a value the service would refuse at start-up', async () => {
    const problems = await deploymentEnvProblems(gateway, {
      'env.API_KEY_CACHE_TTL_MS': '-1',
      'env.PUBLISH_TIMEOUT_MS': 'soon',
    });
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).toMatch(/API_KEY_CACHE_TTL_MS/);
    expect(problems.join('\n')).toMatch(/PUBLISH_TIMEOUT_MS/);
  });
});

describe('release checks', () => {
  it('report a grace period shorter than the shutdown it has to cover', async () => {
    const manifests = await renderService(gateway, strimzi, { 'shutdown.marginSeconds': '-10' });
    expect(releaseProblems(manifests).join('\n')).toMatch(/terminationGracePeriodSeconds 20 does not cover/);
  });

  it('report a sender whose shutdown timeout does not cover the provider calls in flight', async () => {
    const manifests = await renderService(telegramSender, strimzi, { 'env.SEND_TIMEOUT_MS': '25000' });
    expect(releaseProblems(manifests)).toEqual([
      'Deployment telegram-sender container telegram-sender: SHUTDOWN_TIMEOUT_MS (30000 ms) leaves less than 10000 ms after SEND_TIMEOUT_MS (25000 ms) to publish the last outcomes and stop',
    ]);
  });

  it('report a webhook dispatcher whose shutdown timeout does not cover the webhook attempts in flight', async () => {
    const manifests = await renderService(dispatcher, strimzi, { 'env.WEBHOOK_TIMEOUT_MS': '25000' });
    expect(releaseProblems(manifests)).toEqual([
      'Deployment webhook-dispatcher container webhook-dispatcher: SHUTDOWN_TIMEOUT_MS (30000 ms) leaves less than 10000 ms after WEBHOOK_TIMEOUT_MS (25000 ms) to publish the last outcomes and stop',
    ]);
  });

  it('report an SSRF allowlist that lets company webhooks reach private addresses', async () => {
    const manifests = await renderService(dispatcher, strimzi, {
      'env.WEBHOOK_SSRF_ALLOWLIST': '10.0.0.0/8',
    });
    expect(releaseProblems(manifests)).toEqual([
      'Deployment webhook-dispatcher container webhook-dispatcher: WEBHOOK_SSRF_ALLOWLIST (10.0.0.0/8) lets company webhooks reach private or loopback addresses (local development only)',
    ]);
  });

  it('report a hook Job that reads the ConfigMap the release creates only after its hooks', async () => {
    const manifests = clone(await renderService(registry, strimzi));
    podTemplate(ofKind(manifests, 'Job')[0]!).spec.containers[0]!.envFrom = [
      { configMapRef: { name: 'client-registry' } },
    ];
    expect(releaseProblems(manifests)).toEqual([
      'hook Job client-registry-deploy-step: reads ConfigMap client-registry, which the release creates after its hooks',
    ]);
  });

  it('report probes on the wrong path, replicas beside an autoscaler, and a Service aimed at no port', async () => {
    const manifests = clone(await renderService(gateway, strimzi));
    const deployment = ofKind(manifests, 'Deployment')[0]!;
    (deployment.spec as { replicas?: number }).replicas = 3;
    podTemplate(deployment).spec.containers[0]!.readinessProbe = {
      httpGet: { path: '/healthz', port: 'http' },
    };
    (ofKind(manifests, 'Service')[0]!.spec as { ports: { targetPort: string }[] }).ports[0]!.targetPort =
      'web';
    const problems = releaseProblems(manifests).join('\n');
    expect(problems).toMatch(/readinessProbe must GET \/readyz/);
    expect(problems).toMatch(/sets replicas although an autoscaler owns them/);
    expect(problems).toMatch(/targets web, which no container has/);
  });

  it('report /readyz, /healthz or /metrics served from the public port', async () => {
    const manifests = clone(await renderService(gateway, strimzi));
    const container = podTemplate(ofKind(manifests, 'Deployment')[0]!).spec.containers[0]!;
    container.livenessProbe = { httpGet: { path: '/healthz', port: 'http' } };
    const monitors = ofKind(manifests, 'ServiceMonitor');
    for (const monitor of monitors)
      (monitor.spec as { endpoints: { port: string }[] }).endpoints[0]!.port = 'http';
    const problems = releaseProblems(manifests).join('\n');
    expect(problems).toMatch(/livenessProbe must use the ops port/);
    if (monitors.length > 0) expect(problems).toMatch(/must scrape the ops port, not http/);
  });
});

describe('the deploy-step Job and what exposes the gateway', () => {
  it("report a deploy-step Job whose pods carry the service's labels (as before: the PDB and HPA counted them)", async () => {
    const manifests = clone(await renderService(gateway, strimzi));
    const selector = (
      ofKind(manifests, 'Deployment')[0]!.spec as { selector: { matchLabels: Record<string, string> } }
    ).selector.matchLabels;
    podTemplate(ofKind(manifests, 'Job')[0]!).metadata!.labels = {
      ...selector,
      'app.kubernetes.io/component': 'deploy-step',
    };
    expect(releaseProblems(manifests)).toEqual([
      'Job gateway-deploy-step: its pods match the selector of Deployment gateway',
      'Job gateway-deploy-step: its pods match the selector of PodDisruptionBudget gateway',
      'Job gateway-deploy-step: its pods match the selector of Service gateway',
    ]);
  });

  it('report an Ingress or an HTTPRoute aimed at a port the Service does not have, and an HTTPRoute of the wrong shape', async () => {
    const manifests = clone(
      await render('gateway', [gateway.file, strimzi, join(examplesDir, 'expose', 'gateway.yaml')]),
    );
    const ingress = ofKind(manifests, 'Ingress')[0]!;
    const route = ofKind(manifests, 'HTTPRoute')[0]!;
    const paths = (
      ingress.spec as { rules: { http: { paths: { backend: { service: { port: { name: string } } } }[] } }[] }
    ).rules[0]!.http.paths;
    paths[0]!.backend.service.port.name = 'web';
    const refs = (route.spec as { rules: { backendRefs: { port: number | string }[] }[] }).rules[0]!
      .backendRefs;
    refs[0]!.port = 9999;
    expect(releaseProblems(manifests)).toEqual([
      'Ingress gateway: /api goes to gateway:web, which is no Service port of the release',
      'HTTPRoute gateway: a rule goes to gateway:9999, which is no Service port of the release',
    ]);
    refs[0]!.port = 'http';
    expect((await schemaProblems(route)).join('\n')).toMatch(/backendRefs\/0\/port must be integer/);
    // A misspelt field, which the Gateway API's JSON schema lets through and the API server refuses.
    refs[0]!.port = 8080;
    const rule = (route.spec as { rules: Record<string, unknown>[] }).rules[0]!;
    rule.backendRef = rule.backendRefs;
    delete rule.backendRefs;
    expect(strictProblems(inject('kubeStrict'), [route]).problems).toEqual([
      'HTTPRoute gateway: unknown field "spec.rules[0].backendRef"',
    ]);
  });
});

describe('the chart refuses what cannot work', () => {
  it('without Kafka bootstrap servers', async () => {
    await expect(render('gateway', [gateway.file])).rejects.toThrow(/kafka.bootstrapServers is required/);
  });

  it('with a SASL mechanism but no password Secret', async () => {
    await expect(
      render('gateway', [gateway.file, strimzi], {
        'kafka.sasl.passwordSecret.name': '',
        'kafkaUser.create': 'false',
        'kafka.sasl.username': 'gateway',
      }),
    ).rejects.toThrow(/kafka.sasl.passwordSecret.name is required/);
  });

  it('installing the messenger simulator unless asked for a dev component', async () => {
    await expect(render('messenger-simulator', [simulator.file])).rejects.toThrow(
      /local\/dev-only component/,
    );
  });

  it('with a misspelt setting, which would otherwise be ignored (values.schema.json)', async () => {
    await expect(renderService(gateway, strimzi, { 'autoscalling.enabled': 'true' })).rejects.toThrow(
      /additional properties 'autoscalling' not allowed/,
    );
    await expect(renderService(gateway, strimzi, { 'kafka.sasl.mechanism': 'scram' })).rejects.toThrow(
      /kafka\/sasl\/mechanism/,
    );
  });

  it('without a service values file', async () => {
    await expect(render('x', [strimzi])).rejects.toThrow(/service.name is required/);
  });
});
