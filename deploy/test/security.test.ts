import { describe, expect, it } from 'vitest';
import { allTopics } from '@mds/contracts';
import { containerEnv, ofKind, podTemplate, type Container } from './checks.js';
import { aclRules, expectedAccess, expectedAclRules, kafkaUserProblems } from './security-checks.js';
import { environments, examplesDir, render, renderService, serviceValues, type Manifest } from './support.js';
import { join } from 'node:path';

const services = serviceValues();
const names = services.map((s) => s.service.name);
const strimzi = join(examplesDir, 'strimzi.yaml');
const kafkaServices = services.filter((s) => (s.uses as { kafka?: boolean } | undefined)?.kafka !== false);

interface Pod {
  containers: Container[];
  volumes?: {
    name: string;
    projected?: { sources: { secret?: { name: string; items?: { key: string; path: string }[] } }[] };
  }[];
}

describe.each(environments())('secrets, $name environment', ({ file }) => {
  it.each(services.map((s) => [s.service.name, s] as const))(
    '%s: reach the containers as files (NAME_FILE), never as environment variables',
    async (_name, service) => {
      const manifests = await renderService(service, file);
      for (const workload of [...ofKind(manifests, 'Deployment'), ...ofKind(manifests, 'Job')]) {
        const pod = podTemplate(workload).spec as unknown as Pod;
        for (const container of pod.containers) {
          const fromSecrets = (container.env ?? []).filter((e) => e.valueFrom?.secretKeyRef);
          expect(fromSecrets.map((e) => e.name)).toEqual([]);
          expect((container.envFrom ?? []).filter((e) => e.secretRef)).toEqual([]);
          for (const [name, { value }] of containerEnv(container, manifests)) {
            if (name.endsWith('_FILE') && value.startsWith('/etc/mds/secrets/')) {
              expect(value).toBe(`/etc/mds/secrets/${name.slice(0, -'_FILE'.length)}`);
            }
          }
        }
      }
    },
  );
});

describe('the secret files', () => {
  it('give each caller of the registry its own token Secret, and the registry the caller list', async () => {
    const [environment] = environments();
    const secretsOf = async (name: string) => {
      const manifests = await renderService(
        services.find((s) => s.service.name === name)!,
        environment!.file,
      );
      const pod = podTemplate(ofKind(manifests, 'Deployment')[0]!).spec as unknown as Pod;
      const volume = pod.volumes?.find((v) => v.name === 'secrets');
      return volume?.projected?.sources.map((s) => s.secret?.name) ?? [];
    };
    expect(await secretsOf('gateway')).toContain('mds-grpc-gateway');
    expect(await secretsOf('telegram-sender')).toContain('mds-grpc-telegram-sender');
    expect(await secretsOf('webhook-dispatcher')).toContain('mds-grpc-webhook-dispatcher');
    expect(await secretsOf('client-registry')).toContain('mds-grpc-callers');
    expect(await secretsOf('client-registry')).not.toContain('mds-grpc-gateway');
  });

  it('mount the gRPC TLS Secret and name its files when internalGrpc.tls is on (mutual: both ways)', async () => {
    const [environment] = environments();
    const set = {
      'internalGrpc.tls.enabled': 'true',
      'internalGrpc.tls.secretName': 'tls',
      'internalGrpc.tls.mutual': 'true',
    };
    const envOf = async (name: string) => {
      const service = services.find((s) => s.service.name === name)!;
      const manifests = await render(name, [service.file, environment!.file], set);
      const container = podTemplate(ofKind(manifests, 'Deployment')[0]!).spec.containers[0]!;
      return Object.fromEntries([...containerEnv(container, manifests)].map(([k, v]) => [k, v.value]));
    };
    expect(await envOf('client-registry')).toMatchObject({
      GRPC_TLS_CERT_FILE: '/etc/mds/grpc-tls/tls.crt',
      GRPC_TLS_KEY_FILE: '/etc/mds/grpc-tls/tls.key',
      GRPC_TLS_CLIENT_CA_FILE: '/etc/mds/grpc-tls/ca.crt',
      REGISTRY_REQUIRE_CALLERS: 'true',
    });
    expect(await envOf('gateway')).toMatchObject({
      REGISTRY_GRPC_TLS: 'true',
      REGISTRY_GRPC_TLS_CA_FILE: '/etc/mds/grpc-tls/ca.crt',
      REGISTRY_GRPC_TLS_CERT_FILE: '/etc/mds/grpc-tls/tls.crt',
      REGISTRY_GRPC_TLS_KEY_FILE: '/etc/mds/grpc-tls/tls.key',
    });
  });
});

describe('TLS', () => {
  const [environment] = environments();
  const releaseOf = async (name: string, set: Record<string, string> = {}) => {
    const service = services.find((s) => s.service.name === name)!;
    const manifests = await renderService(service, environment!.file, set);
    const deployment = ofKind(manifests, 'Deployment')[0]!;
    const pod = podTemplate(deployment).spec as unknown as {
      containers: Container[];
      volumes?: { name: string; secret?: { secretName: string; items?: { key: string }[] } }[];
    };
    const env = Object.fromEntries(
      [...containerEnv(pod.containers[0]!, manifests)].map(([k, v]) => [k, v.value]),
    );
    return { env, grpcTls: pod.volumes?.find((v) => v.name === 'grpc-tls')?.secret };
  };

  it('is on by default: Kafka over TLS for every service, gRPC over TLS for the registry and its callers', async () => {
    for (const service of kafkaServices) {
      expect([service.service.name, (await releaseOf(service.service.name)).env.KAFKA_SSL]).toEqual([
        service.service.name,
        'true',
      ]);
    }
    const registry = await releaseOf('client-registry');
    expect(registry.env).toMatchObject({
      GRPC_TLS_CERT_FILE: '/etc/mds/grpc-tls/tls.crt',
      GRPC_TLS_KEY_FILE: '/etc/mds/grpc-tls/tls.key',
    });
    expect(registry.grpcTls).toMatchObject({ secretName: 'mds-grpc-tls' });
    for (const caller of ['gateway', 'telegram-sender', 'max-sender', 'webhook-dispatcher', 'dashboard']) {
      const release = await releaseOf(caller);
      expect([caller, release.env.REGISTRY_GRPC_TLS, release.env.REGISTRY_GRPC_TLS_CA_FILE]).toEqual([
        caller,
        'true',
        '/etc/mds/grpc-tls/ca.crt',
      ]);
      // A caller without a certificate of its own mounts the CA only, never the registry's key.
      expect(release.grpcTls?.items).toEqual([{ key: 'ca.crt', path: 'ca.crt' }]);
    }
    // A release that neither serves nor calls gRPC mounts nothing of it.
    expect((await releaseOf('messenger-simulator', { 'devOnly.allowed': 'true' })).grpcTls).toBeUndefined();
  });

  it('is off where an environment opts out (kafka.tls.enabled, internalGrpc.tls.enabled: false)', async () => {
    const off = { 'kafka.tls.enabled': 'false', 'internalGrpc.tls.enabled': 'false' };
    const gateway = await releaseOf('gateway', off);
    expect(gateway.env.KAFKA_SSL).toBe('false');
    expect(gateway.env).not.toHaveProperty('REGISTRY_GRPC_TLS');
    expect(gateway.grpcTls).toBeUndefined();
    const registry = await releaseOf('client-registry', off);
    expect(registry.env).not.toHaveProperty('GRPC_TLS_CERT_FILE');
  });
});

interface NetworkPolicyRule {
  ports: { port: number }[];
  from?: { podSelector?: { matchLabels?: Record<string, string> }; namespaceSelector?: object }[];
}

function rulesFor(policy: Manifest, port: number): NetworkPolicyRule[] {
  const spec = policy.spec as { ingress: NetworkPolicyRule[]; policyTypes: string[] };
  expect(spec.policyTypes).toEqual(['Ingress', 'Egress']);
  return spec.ingress.filter((r) => r.ports.some((p) => p.port === port));
}

interface EgressRule {
  ports?: { port: number; protocol: string }[];
  to?: {
    podSelector?: { matchLabels?: Record<string, string> };
    namespaceSelector?: object;
    ipBlock?: { cidr: string; except?: string[] };
  }[];
}

/** A release's egress rules, each as "<peers> <ports>": what its pods may open connections to. */
function egressOf(policy: Manifest): string[] {
  const spec = policy.spec as { egress?: EgressRule[] };
  return (spec.egress ?? []).map((r) => {
    const peers = (r.to ?? [])
      .map((t) =>
        t.ipBlock
          ? `ip:${t.ipBlock.cidr}`
          : t.podSelector?.matchLabels?.['app.kubernetes.io/name']
            ? `pod:${t.podSelector.matchLabels['app.kubernetes.io/name']}`
            : t.podSelector?.matchLabels?.['k8s-app']
              ? `dns`
              : 'peer',
      )
      .join('+');
    const ports = (r.ports ?? []).map((p) => `${p.port}/${p.protocol}`).join(',');
    return `${peers || 'any'} ${ports || 'any'}`;
  });
}

describe('network policies', () => {
  const [environment] = environments();
  const policyOf = async (name: string, set: Record<string, string> = {}) => {
    const service = services.find((s) => s.service.name === name)!;
    const manifests = await render(name, [service.file, environment!.file], set);
    const policies = ofKind(manifests, 'NetworkPolicy');
    expect(policies).toHaveLength(1);
    return policies[0]!;
  };

  it('render one per release, selecting the release pods', async () => {
    for (const service of services) {
      const policy = await policyOf(
        service.service.name,
        service.service.devOnly ? { 'devOnly.allowed': 'true' } : {},
      );
      expect((policy.spec as { podSelector: unknown }).podSelector).toEqual({
        matchLabels: {
          'app.kubernetes.io/name': service.service.name,
          'app.kubernetes.io/instance': service.service.name,
        },
      });
    }
  });

  it("admit the registry's gRPC port from its five callers only, and its HTTP port from the namespace and monitoring", async () => {
    const policy = await policyOf('client-registry');
    const [grpcRule] = rulesFor(policy, 50051);
    expect(grpcRule!.from!.map((f) => f.podSelector?.matchLabels?.['app.kubernetes.io/name']).sort()).toEqual(
      ['dashboard', 'gateway', 'max-sender', 'telegram-sender', 'webhook-dispatcher'],
    );
    const [httpRule] = rulesFor(policy, 8081);
    expect(httpRule!.from).toEqual([{ podSelector: {} }]);
  });

  it("admit the gateway's public port from anywhere, and the ops port (/metrics) from monitoring only", async () => {
    const policy = await policyOf('gateway', { 'ports.ops': '9464' });
    expect(rulesFor(policy, 8080)).toEqual([{ ports: [{ port: 8080, protocol: 'TCP' }] }]);
    expect(rulesFor(policy, 9464)[0]!.from).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
    ]);
  });

  it('let each release open connections only where it must: DNS, Kafka, PostgreSQL, the services it calls, and the internet for those that talk to it', async () => {
    const base = ['dns 53/UDP,53/TCP', 'any 9092/TCP,9093/TCP', 'any 5432/TCP'];
    const grpc = 'pod:client-registry 50051/TCP';
    const internet443 = 'ip:0.0.0.0/0+ip:::/0 443/TCP';
    const egress = async (name: string) => egressOf(await policyOf(name));
    expect(await egress('gateway')).toEqual([...base, grpc]);
    expect(await egress('client-registry')).toEqual([...base, internet443]);
    expect(await egress('telegram-sender')).toEqual([...base, grpc, internet443]);
    expect(await egress('max-sender')).toEqual([...base, grpc, internet443]);
    // Companies' webhook URLs name any port.
    expect(await egress('webhook-dispatcher')).toEqual([...base, grpc, 'ip:0.0.0.0/0+ip:::/0 any']);
    expect(await egress('dashboard')).toEqual([
      ...base,
      grpc,
      'pod:client-registry 8081/TCP',
      'pod:webhook-dispatcher 8084/TCP',
      'pod:gateway 8080/TCP',
    ]);
    // The internet is the public one: never the private ranges, nor the clouds' metadata service.
    const internet = ((await policyOf('webhook-dispatcher')).spec as { egress: EgressRule[] }).egress.at(-1)!;
    expect(internet.to![0]!.ipBlock!.except).toEqual(
      expect.arrayContaining([
        '10.0.0.0/8',
        '172.16.0.0/12',
        '192.168.0.0/16',
        '169.254.0.0/16',
        '127.0.0.0/8',
      ]),
    );
    expect(internet.to![1]!.ipBlock!.except).toEqual(
      expect.arrayContaining(['fc00::/7', 'fe80::/10', '::1/128']),
    );
    // Tracing on: the collector's port too.
    expect(egressOf(await policyOf('gateway', { 'otel.endpoint': 'https://otel.example.com' }))).toContain(
      'any 443/TCP',
    );
  });

  it('restrict no egress where an environment turns it off (networkPolicy.egress.enabled: false)', async () => {
    const policy = await policyOf('gateway', { 'networkPolicy.egress.enabled': 'false' });
    expect((policy.spec as { policyTypes: string[] }).policyTypes).toEqual(['Ingress']);
    expect(policy.spec).not.toHaveProperty('egress');
  });

  it('admit nothing on a port the release does not serve (no gRPC rule for the callers)', async () => {
    for (const name of ['gateway', 'telegram-sender', 'max-sender', 'webhook-dispatcher', 'dashboard']) {
      const spec = (await policyOf(name)).spec as { ingress: NetworkPolicyRule[] };
      expect(spec.ingress.flatMap((r) => r.ports.map((p) => p.port))).not.toContain(50051);
    }
  });
});

describe('Kafka users (Strimzi example)', () => {
  it('the ownership table names every topic a writer, and every writer and reader is a service', () => {
    for (const topic of allTopics()) {
      const users = names.filter((n) => expectedAccess(n, names).writes.includes(topic.name));
      expect(users.length, topic.name).toBeGreaterThan(0);
      for (const reader of topic.readers) expect(names, topic.name).toContain(reader);
    }
  });

  it.each(kafkaServices.map((s) => [s.service.name, s] as const))(
    "%s: the service's KafkaUser uses its topics only, the deploy step's creates and configures them, each as the ownership table says",
    async (name, service) => {
      const manifests = await renderService(service, strimzi);
      const users = ofKind(manifests, 'KafkaUser');
      expect(users.map((u) => u.metadata.name)).toEqual([name, `${name}-deploy`]);
      const [own, deploy] = users as [Manifest, Manifest];
      for (const user of users) expect(kafkaUserProblems(user)).toEqual([]);
      expect(aclRules(own)).toEqual(expectedAclRules(name, names, ''));
      expect(aclRules(deploy)).toEqual(expectedAclRules(name, names, '', 'deploy-step'));
      // The running service may neither create a topic nor change its settings.
      expect(aclRules(own).filter((r) => /Create|Alter|DescribeConfigs|All/.test(r))).toEqual([]);
      // Each logs in as its own user, with the password from the Secret Strimzi makes for it.
      const loginOf = (workload: Manifest) => {
        const pod = podTemplate(workload).spec as unknown as Pod;
        const env = containerEnv(pod.containers[0]!, manifests);
        const secrets = pod.volumes?.find((v) => v.name === 'secrets')?.projected?.sources ?? [];
        return {
          user: env.get('KAFKA_SASL_USERNAME')?.value,
          passwordFrom: secrets.find((s) => s.secret?.items?.some((i) => i.path === 'KAFKA_SASL_PASSWORD'))
            ?.secret?.name,
        };
      };
      expect(loginOf(ofKind(manifests, 'Deployment')[0]!)).toEqual({ user: name, passwordFrom: name });
      expect(loginOf(ofKind(manifests, 'Job')[0]!)).toEqual({
        user: `${name}-deploy`,
        passwordFrom: `${name}-deploy`,
      });
    },
  );

  it("names the deploy step's user and Secret as told, and falls back to the service's own without kafkaUser.create", async () => {
    const service = services.find((s) => s.service.name === 'gateway')!;
    const jobLogin = async (set: Record<string, string>) => {
      const manifests = await render('gateway', [service.file, strimzi], set);
      const job = ofKind(manifests, 'Job')[0]!;
      return containerEnv(podTemplate(job).spec.containers[0]!, manifests).get('KAFKA_SASL_USERNAME')?.value;
    };
    expect(await jobLogin({ 'deployStep.kafka.sasl.username': 'mds-migrator' })).toBe('mds-migrator');
    expect(
      await jobLogin({
        'kafkaUser.create': 'false',
        'kafka.sasl.username': 'gw',
        'kafka.sasl.passwordSecret.name': 'gw',
      }),
    ).toBe('gw');
  });

  it('prefix the topics and groups with kafka.topicPrefix', async () => {
    const service = services.find((s) => s.service.name === 'gateway')!;
    const manifests = await render('gateway', [service.file, strimzi], { 'kafka.topicPrefix': 'staging.' });
    expect(aclRules(ofKind(manifests, 'KafkaUser')[0]!)).toEqual(
      expectedAclRules('gateway', names, 'staging.'),
    );
    expect(aclRules(ofKind(manifests, 'KafkaUser')[0]!)).toContain(
      'topic:literal:staging.mds.message.v1 Write',
    );
  });

  it('the check fails for a user that may write a topic the service does not own', async () => {
    const service = services.find((s) => s.service.name === 'gateway')!;
    const manifests = await render('gateway', [service.file, strimzi], {
      'kafkaUser.writes[2]': 'mds.account.v1',
    });
    expect(aclRules(ofKind(manifests, 'KafkaUser')[0]!)).not.toEqual(expectedAclRules('gateway', names, ''));
  });

  it("the gateway's user may not write mds.account.v1 (the integration test shows the broker refusing it)", () => {
    expect(expectedAccess('gateway', names).writes).toEqual([
      'mds.api-requests.v1',
      'mds.client-request.v1',
      'mds.message.v1',
    ]);
  });
});
