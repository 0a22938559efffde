// Checks of rendered manifests that need no cluster: the Kubernetes API schemas (kubernetes-models, offline),
// how the objects of one release refer to each other, and the environment each container gets against the
// service's own zod config schema. Each returns a list of problems; empty means fine.
import { execFileSync } from 'node:child_process';
import type { z } from '@mds/config';
import { kafkaUserProblems } from './security-checks.js';
import type { Manifest } from './support.js';

/**
 * Decodes manifests into the Kubernetes API's Go types with strict field validation (deploy/tools/kube-strict),
 * as the API server does on apply: catches what the JSON schemas let through, an unknown (misspelt) field.
 * Returns the problems and the kinds it has no Go type for (custom resources, checked by schemaProblems).
 */
export function strictProblems(
  kubeStrict: string,
  manifests: Manifest[],
): { problems: string[]; unchecked: string[] } {
  const output = execFileSync(kubeStrict, { input: JSON.stringify(manifests), encoding: 'utf8' });
  return JSON.parse(output) as { problems: string[]; unchecked: string[] };
}

type Validatable = { validate(): void };
type ModelClass = new (data: unknown) => Validatable;

/**
 * Where the schema of an apiVersion lives: kubernetes-models for the API, its siblings for the Prometheus Operator
 * and the Gateway API.
 */
function modelModule(apiVersion: string): string {
  if (apiVersion.startsWith('monitoring.coreos.com/'))
    return `@kubernetes-models/prometheus-operator/${apiVersion}`;
  if (apiVersion.startsWith('gateway.networking.k8s.io/'))
    return `@kubernetes-models/gateway-api/${apiVersion}`;
  return `kubernetes-models/${apiVersion}`;
}

/** Validates a manifest against the schema of its apiVersion and kind; an unknown kind is itself a problem. */
export async function schemaProblems(manifest: Manifest): Promise<string[]> {
  const where = `${manifest.kind ?? '?'} ${manifest.metadata?.name ?? '?'}`;
  if (!manifest.apiVersion || !manifest.kind) return [`${where}: apiVersion and kind are required`];
  // Strimzi's resources have no published models here: kafkaUserProblems (security-checks.ts) checks them.
  if (manifest.apiVersion === 'kafka.strimzi.io/v1beta2' && manifest.kind === 'KafkaUser') {
    return kafkaUserProblems(manifest);
  }
  let models: Record<string, unknown>;
  try {
    models = (await import(modelModule(manifest.apiVersion))) as Record<string, unknown>;
  } catch {
    return [`${where}: no schema for apiVersion ${manifest.apiVersion}`];
  }
  const Model = models[manifest.kind] as ModelClass | undefined;
  if (typeof Model !== 'function') return [`${where}: no schema for ${manifest.apiVersion} ${manifest.kind}`];
  try {
    new Model(manifest).validate();
    return [];
  } catch (error) {
    const details = (error as { errors?: { instancePath: string; message?: string; params?: unknown }[] })
      .errors;
    if (!details) return [`${where}: ${(error as Error).message}`];
    return details.map((d) =>
      `${where}: ${d.instancePath || '/'} ${d.message ?? ''} ${JSON.stringify(d.params ?? {})}`.trim(),
    );
  }
}

// --- the shapes the checks read (only the fields they need) ------------------------------------------------

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: { name: string; key: string };
  };
}
export interface Container {
  name: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command?: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
}
interface Probe {
  httpGet?: { path?: string; port?: string | number };
}
interface PodSpec {
  containers: Container[];
  serviceAccountName?: string;
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean };
  volumes?: { name: string; configMap?: { name: string } }[];
}
interface PodTemplate {
  metadata?: { labels?: Record<string, string> };
  spec: PodSpec;
}

interface IngressPath {
  path: string;
  backend: { service?: { name: string; port: { name?: string; number?: number } } };
}

const HOOK = 'helm.sh/hook';

export function ofKind(manifests: Manifest[], kind: string): Manifest[] {
  return manifests.filter((m) => m.kind === kind);
}

export function podTemplate(workload: Manifest): PodTemplate {
  return (workload.spec as { template: PodTemplate }).template;
}

function matches(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

/** The environment a container starts with: envFrom ConfigMaps of the release, then env, $(VAR) expanded. */
/** One variable of a container: its value (a placeholder for a secret's) and where it comes from. */
export interface ContainerEnvValue {
  value: string;
  fromSecret: boolean;
  /** From a Secret the pod starts without (`secretKeyRef.optional`). */
  optional?: boolean;
}

export function containerEnv(container: Container, manifests: Manifest[]): Map<string, ContainerEnvValue> {
  const env = new Map<string, ContainerEnvValue>();
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) {
      const map = ofKind(manifests, 'ConfigMap').find((m) => m.metadata.name === source.configMapRef!.name);
      for (const [name, value] of Object.entries((map?.data as Record<string, string> | undefined) ?? {})) {
        env.set(name, { value, fromSecret: false });
      }
    }
  }
  for (const variable of container.env ?? []) {
    const secretFile = variable.value && secretFileSource(variable.value, manifests);
    if (secretFile && variable.name.endsWith('_FILE')) {
      // A Secret mounted as a file: NAME_FILE stands for NAME (see @mds/config's loadConfig).
      env.set(variable.name.slice(0, -'_FILE'.length), {
        value: SECRET_PLACEHOLDER,
        fromSecret: true,
        optional: secretFile.optional === true,
      });
    }
    if (variable.valueFrom?.secretKeyRef) {
      env.set(variable.name, {
        value: SECRET_PLACEHOLDER,
        fromSecret: true,
        optional: variable.valueFrom.secretKeyRef.optional === true,
      });
    } else if (variable.value !== undefined) {
      // Kubernetes expands $(NAME) from variables defined before; unknown references stay as they are.
      const expanded = variable.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) =>
        env.has(name) ? env.get(name)!.value : whole,
      );
      env.set(variable.name, { value: expanded, fromSecret: false });
    }
  }
  return env;
}

/** Where the chart mounts secret settings as files (deploy/chart/templates/_secrets.tpl). */
export const SECRETS_DIR = '/etc/mds/secrets/';

interface ProjectedVolume {
  name: string;
  projected?: {
    sources: { secret?: { name: string; items?: { key: string; path: string }[]; optional?: boolean } }[];
  };
}

/** The projected Secret a path under SECRETS_DIR comes from, looked up in the rendered pods' volumes. */
function secretFileSource(
  path: string,
  manifests: Manifest[],
): { name: string; optional?: boolean } | undefined {
  if (!path.startsWith(SECRETS_DIR)) return undefined;
  const file = path.slice(SECRETS_DIR.length);
  for (const manifest of manifests) {
    const volumes = (manifest.spec as { template?: { spec?: { volumes?: ProjectedVolume[] } } } | undefined)
      ?.template?.spec?.volumes;
    for (const volume of volumes ?? []) {
      for (const source of volume.projected?.sources ?? []) {
        if (source.secret?.items?.some((item) => item.path === file)) return source.secret;
      }
    }
  }
  return undefined;
}

/**
 * NAME_FILE (a mounted Secret) stands for NAME, as @mds/config's loadConfig reads it: NAME counts as set from a
 * Secret, and NAME_FILE itself is dropped unless the schema also knows it by that name.
 */
function withFileSettings(
  env: Map<string, ContainerEnvValue>,
  known: Record<string, z.ZodType>,
): Map<string, ContainerEnvValue> {
  const out = new Map(env);
  for (const name of env.keys()) {
    const base = name.endsWith('_FILE') ? name.slice(0, -'_FILE'.length) : undefined;
    if (!base || !(base in known)) continue;
    if (!out.has(base)) out.set(base, { value: SECRET_PLACEHOLDER, fromSecret: true });
    if (!(name in known)) out.delete(name);
  }
  return out;
}

/** What a secret's value is taken to be when checking a configuration: the cluster holds the real one. */
export const SECRET_PLACEHOLDER = 'from-a-secret-0123456789abcdef';

/** Variables the chart sets for the runtime rather than for the service's config schema. */
export const CHART_ONLY_ENV = new Set([
  // Extra CA certificates Node trusts (Kafka's CA when kafka.tls.caSecret is set).
  'NODE_EXTRA_CA_CERTS',
]);

function objectShape(schema: z.ZodType): Record<string, z.ZodType> {
  let current: unknown = schema;
  for (let depth = 0; depth < 5 && current; depth++) {
    const shape = (current as { shape?: Record<string, z.ZodType> }).shape;
    if (shape) return shape;
    const def = (current as { def?: { in?: unknown; innerType?: unknown; schema?: unknown } }).def;
    current = def?.in ?? def?.innerType ?? def?.schema;
  }
  throw new Error('the config schema is not a zod object');
}

/** The variables a schema cannot do without (no default, not optional). */
export function requiredVariables(schema: z.ZodType): string[] {
  return Object.entries(objectShape(schema))
    .filter(([, field]) => !field.safeParse(undefined).success)
    .map(([name]) => name)
    .sort();
}

/**
 * The environment a container gets, against the service's config schema: every required variable set, no
 * variable the schema does not know (a typo would silently fall back to a default), and every plain value
 * valid, the whole parsed as the service parses it at start-up (cross-field rules included, secrets taken as
 * placeholders).
 */
export function envProblems(
  where: string,
  containerEnvironment: Map<string, ContainerEnvValue>,
  schema: z.ZodType,
): string[] {
  const problems: string[] = [];
  const known = objectShape(schema);
  const env = withFileSettings(containerEnvironment, known);
  for (const name of requiredVariables(schema)) {
    if (!env.has(name)) problems.push(`${where}: required ${name} is not set by the chart`);
    else if (env.get(name)!.optional) {
      problems.push(
        `${where}: required ${name} comes from an optional Secret (the pod would start without it)`,
      );
    }
  }
  for (const name of env.keys()) {
    // OTEL_* variables are read by the telemetry start-up (packages/telemetry), not the config schema.
    if (!(name in known) && !CHART_ONLY_ENV.has(name) && !name.startsWith('OTEL_')) {
      problems.push(`${where}: sets ${name}, which the service's config schema does not know`);
    }
  }
  const values = Object.fromEntries([...env].map(([name, v]) => [name, v.value]));
  const parsed = schema.safeParse(values);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = String(issue.path[0] ?? '');
      if (env.get(name)?.fromSecret) continue; // its real value is in the cluster
      if (!env.has(name) && requiredVariables(schema).includes(name)) continue; // reported above
      problems.push(`${where}: ${name || '(config)'} ${issue.message}`);
    }
  }
  return problems;
}

/**
 * What a service needs after its last outgoing call in flight returned: store and publish the outcomes, close
 * Kafka and PostgreSQL.
 */
export const SHUTDOWN_AFTER_SEND_MS = 10_000;

/** Settings bounding one outgoing call a service waits for on SIGTERM: a sender's provider call, a webhook POST. */
const IN_FLIGHT_TIMEOUTS = ['SEND_TIMEOUT_MS', 'WEBHOOK_TIMEOUT_MS'];

/** How the objects of one release refer to each other, and what running it in production needs. */
export function releaseProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  const deployments = ofKind(manifests, 'Deployment');
  const jobs = ofKind(manifests, 'Job');
  const services = ofKind(manifests, 'Service');
  const configMaps = new Set(ofKind(manifests, 'ConfigMap').map((m) => m.metadata.name));
  const hookless = new Map(
    manifests.filter((m) => !m.metadata.annotations?.[HOOK]).map((m) => [`${m.kind}/${m.metadata.name}`, m]),
  );

  for (const deployment of deployments) {
    const where = `Deployment ${deployment.metadata.name}`;
    const spec = deployment.spec as {
      selector?: { matchLabels?: Record<string, string> };
      replicas?: number;
    };
    const template = podTemplate(deployment);
    const pod = template.spec;
    if (!matches(spec.selector?.matchLabels, template.metadata?.labels)) {
      problems.push(`${where}: its selector does not match its pod labels`);
    }
    if (pod.securityContext?.runAsNonRoot !== true) problems.push(`${where}: pods may run as root`);
    for (const container of pod.containers) {
      const at = `${where} container ${container.name}`;
      const ports = new Set((container.ports ?? []).map((p) => p.name));
      const probes = [
        ['startupProbe', '/healthz'],
        ['livenessProbe', '/healthz'],
        ['readinessProbe', '/readyz'],
      ] as const;
      for (const [probe, path] of probes) {
        const get = container[probe]?.httpGet;
        if (get?.path !== path) problems.push(`${at}: ${probe} must GET ${path}`);
        else if (typeof get.port === 'string' && !ports.has(get.port)) {
          problems.push(`${at}: ${probe} names port ${get.port}, which the container does not have`);
        } else if (get.port !== 'ops') {
          problems.push(`${at}: ${probe} must use the ops port (probes stay off the public one)`);
        }
      }
      if (!container.resources?.requests?.cpu || !container.resources?.requests?.memory) {
        problems.push(`${at}: resource requests (cpu, memory) are missing`);
      }
      if (!container.resources?.limits?.memory) problems.push(`${at}: a memory limit is missing`);
      if (container.securityContext?.readOnlyRootFilesystem !== true) {
        problems.push(`${at}: the root file system is writable`);
      }
      for (const source of container.envFrom ?? []) {
        if (source.configMapRef && !configMaps.has(source.configMapRef.name)) {
          problems.push(`${at}: envFrom names ConfigMap ${source.configMapRef.name}, which is not rendered`);
        }
      }
      // SIGTERM comes after the preStop sleep; the service then has SHUTDOWN_TIMEOUT_MS to stop.
      const sleep = Number(container.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
      const shutdownMs = Number(
        containerEnv(container, manifests).get('SHUTDOWN_TIMEOUT_MS')?.value ?? 25_000,
      );
      // A sender waits for its provider calls in flight (each up to SEND_TIMEOUT_MS), the webhook dispatcher for
      // its webhook POSTs (WEBHOOK_TIMEOUT_MS), before they publish the outcomes and close their connections, all
      // within SHUTDOWN_TIMEOUT_MS.
      for (const setting of IN_FLIGHT_TIMEOUTS) {
        const callMs = containerEnv(container, manifests).get(setting)?.value;
        if (callMs !== undefined && shutdownMs < Number(callMs) + SHUTDOWN_AFTER_SEND_MS) {
          problems.push(
            `${at}: SHUTDOWN_TIMEOUT_MS (${shutdownMs} ms) leaves less than ${SHUTDOWN_AFTER_SEND_MS} ms after ${setting} (${callMs} ms) to publish the last outcomes and stop`,
          );
        }
      }
      // Webhook URLs are the companies' to choose: an allowlist lets them reach the cluster's own network.
      const allowlist = containerEnv(container, manifests).get('WEBHOOK_SSRF_ALLOWLIST')?.value.trim();
      if (allowlist) {
        problems.push(
          `${at}: WEBHOOK_SSRF_ALLOWLIST (${allowlist}) lets company webhooks reach private or loopback addresses (local development only)`,
        );
      }
      const grace = pod.terminationGracePeriodSeconds ?? 30;
      if (grace <= sleep + shutdownMs / 1000) {
        problems.push(
          `${at}: terminationGracePeriodSeconds ${grace} does not cover the preStop sleep (${sleep} s) and SHUTDOWN_TIMEOUT_MS (${shutdownMs} ms)`,
        );
      }
    }
    const hpa = ofKind(manifests, 'HorizontalPodAutoscaler').find(
      (h) =>
        (h.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name === deployment.metadata.name,
    );
    if (hpa && spec.replicas !== undefined) {
      problems.push(
        `${where}: sets replicas although an autoscaler owns them (every upgrade would reset them)`,
      );
    }
  }

  for (const hpa of ofKind(manifests, 'HorizontalPodAutoscaler')) {
    const target = (hpa.spec as { scaleTargetRef: { kind: string; name: string } }).scaleTargetRef;
    if (!hookless.has(`${target.kind}/${target.name}`)) {
      problems.push(
        `HorizontalPodAutoscaler ${hpa.metadata.name}: scales ${target.kind} ${target.name}, which is not rendered`,
      );
    }
  }

  const podLabels = deployments.map((d) => podTemplate(d).metadata?.labels);
  for (const pdb of ofKind(manifests, 'PodDisruptionBudget')) {
    const selector = (pdb.spec as { selector?: { matchLabels?: Record<string, string> } }).selector
      ?.matchLabels;
    if (!podLabels.some((labels) => matches(selector, labels))) {
      problems.push(`PodDisruptionBudget ${pdb.metadata.name}: selects no pod of the release`);
    }
  }

  for (const service of services) {
    const spec = service.spec as {
      selector?: Record<string, string>;
      ports: { name?: string; targetPort?: string | number }[];
    };
    const target = deployments.find((d) => matches(spec.selector, podTemplate(d).metadata?.labels));
    if (!target) {
      problems.push(`Service ${service.metadata.name}: selects no pod of the release`);
      continue;
    }
    const ports = new Set(
      podTemplate(target).spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.name)),
    );
    for (const port of spec.ports) {
      if (typeof port.targetPort === 'string' && !ports.has(port.targetPort)) {
        problems.push(
          `Service ${service.metadata.name}: port ${port.name} targets ${port.targetPort}, which no container has`,
        );
      }
    }
  }

  for (const monitor of ofKind(manifests, 'ServiceMonitor')) {
    const spec = monitor.spec as {
      selector: { matchLabels?: Record<string, string> };
      endpoints: { port?: string }[];
    };
    const service = services.find((s) => matches(spec.selector.matchLabels, s.metadata.labels));
    if (!service) problems.push(`ServiceMonitor ${monitor.metadata.name}: selects no Service of the release`);
    const ports = new Set(
      (service?.spec as { ports: { name?: string }[] } | undefined)?.ports.map((p) => p.name),
    );
    for (const endpoint of spec.endpoints) {
      if (endpoint.port !== 'ops') {
        problems.push(
          `ServiceMonitor ${monitor.metadata.name}: must scrape the ops port, not ${endpoint.port}`,
        );
      }
      if (service && endpoint.port && !ports.has(endpoint.port)) {
        problems.push(
          `ServiceMonitor ${monitor.metadata.name}: scrapes port ${endpoint.port}, which the Service does not have`,
        );
      }
    }
  }

  // A Job's pods (the deploy step's) are not the service's: no selector of the release may take them for its pods
  // (the PodDisruptionBudget and the autoscaler, which counts the pods the Deployment's selector finds, would).
  for (const job of jobs) {
    const labels = podTemplate(job).metadata?.labels;
    type Selector = [string, Record<string, string> | undefined];
    const selectors: Selector[] = [
      ...deployments.map((d): Selector => [
        `Deployment ${d.metadata.name}`,
        (d.spec as { selector?: { matchLabels?: Record<string, string> } }).selector?.matchLabels,
      ]),
      ...ofKind(manifests, 'PodDisruptionBudget').map((pdb): Selector => [
        `PodDisruptionBudget ${pdb.metadata.name}`,
        (pdb.spec as { selector?: { matchLabels?: Record<string, string> } }).selector?.matchLabels,
      ]),
      ...services.map((service): Selector => [
        `Service ${service.metadata.name}`,
        (service.spec as { selector?: Record<string, string> }).selector,
      ]),
    ];
    for (const [what, selector] of selectors) {
      if (matches(selector, labels))
        problems.push(`Job ${job.metadata.name}: its pods match the selector of ${what}`);
    }
  }

  // What exposes the service (an Ingress, an HTTPRoute) sends requests to a Service of the release, on a port it has.
  const servicePort = (name: string, port: string | number | undefined) => {
    const service = services.find((s) => s.metadata.name === name);
    const ports = (service?.spec as { ports: { name?: string; port: number }[] } | undefined)?.ports ?? [];
    return service && ports.some((p) => p.name === port || p.port === port);
  };
  for (const ingress of ofKind(manifests, 'Ingress')) {
    const rules = (ingress.spec as { rules?: { http?: { paths: IngressPath[] } }[] }).rules ?? [];
    for (const path of rules.flatMap((r) => r.http?.paths ?? [])) {
      const backend = path.backend.service;
      if (!backend || !servicePort(backend.name, backend.port.name ?? backend.port.number)) {
        problems.push(
          `Ingress ${ingress.metadata.name}: ${path.path} goes to ${backend?.name ?? '?'}:${backend?.port.name ?? backend?.port.number ?? '?'}, which is no Service port of the release`,
        );
      }
    }
  }
  for (const route of ofKind(manifests, 'HTTPRoute')) {
    const rules =
      (route.spec as { rules?: { backendRefs?: { name: string; port?: number }[] }[] }).rules ?? [];
    for (const ref of rules.flatMap((r) => r.backendRefs ?? [])) {
      if (!servicePort(ref.name, ref.port)) {
        problems.push(
          `HTTPRoute ${route.metadata.name}: a rule goes to ${ref.name}:${ref.port ?? '?'}, which is no Service port of the release`,
        );
      }
    }
  }

  // A pre-install hook runs before the release's other objects exist: it may use none of them.
  for (const job of jobs.filter((j) => j.metadata.annotations?.[HOOK])) {
    const where = `hook Job ${job.metadata.name}`;
    const pod = podTemplate(job).spec;
    if (pod.serviceAccountName && hookless.has(`ServiceAccount/${pod.serviceAccountName}`)) {
      problems.push(
        `${where}: uses ServiceAccount ${pod.serviceAccountName}, which the release creates after its hooks`,
      );
    }
    for (const container of pod.containers) {
      for (const source of container.envFrom ?? []) {
        const name = source.configMapRef?.name;
        if (name && hookless.has(`ConfigMap/${name}`)) {
          problems.push(`${where}: reads ConfigMap ${name}, which the release creates after its hooks`);
        }
      }
      for (const variable of container.env ?? []) {
        const name = variable.valueFrom?.configMapKeyRef?.name;
        if (name && hookless.has(`ConfigMap/${name}`)) {
          problems.push(`${where}: reads ConfigMap ${name}, which the release creates after its hooks`);
        }
      }
    }
    for (const volume of pod.volumes ?? []) {
      if (volume.configMap && hookless.has(`ConfigMap/${volume.configMap.name}`)) {
        problems.push(
          `${where}: mounts ConfigMap ${volume.configMap.name}, which the release creates after its hooks`,
        );
      }
    }
  }
  return problems;
}
