import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { repoRoot } from '@mds/local-infra';

const run = promisify(execFile);

/** An HTTP probe of the chart (httpGet on a named container port). */
export interface Probe {
  path: string;
  port: string;
  periodSeconds: number;
  failureThreshold: number;
  timeoutSeconds: number;
}

/**
 * One container of a rendered Deployment or Job, with everything a container engine needs to run it the way the
 * kubelet would: environment resolved (ConfigMap, Secrets, `$(VAR)` references), user, read-only root
 * filesystem, the writable volumes, ports, probes and the termination grace period.
 */
export interface ContainerSpec {
  /** The release (the service) it belongs to. */
  release: string;
  kind: 'Deployment' | 'Job';
  name: string;
  image: string;
  args: string[];
  env: Record<string, string>;
  user: string;
  readOnlyRootFilesystem: boolean;
  dropAllCapabilities: boolean;
  noNewPrivileges: boolean;
  /** emptyDir volumes (tmpfs here), by mount path. */
  emptyDirs: string[];
  /** Secret volumes (a directory of files here, read-only): the files each holds, by mount path. */
  secretDirs: { mountPath: string; files: Record<string, string> }[];
  ports: { name: string; containerPort: number }[];
  probes: { startup?: Probe; liveness?: Probe; readiness?: Probe };
  terminationGracePeriodSeconds: number;
  preStop?: string[];
}

/** What the test's environment gives: Secrets (by name and key), which the chart only refers to. */
export type Secrets = Record<string, Record<string, string>>;

export class ChartMismatch extends Error {
  override readonly name = 'ChartMismatch';
}

interface K8sContainer {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  env?: {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
  }[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  securityContext?: {
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[] };
    runAsUser?: number;
  };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  startupProbe?: K8sProbe;
  livenessProbe?: K8sProbe;
  readinessProbe?: K8sProbe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
}
interface SecretSource {
  items?: { key: string; path: string }[];
  optional?: boolean;
}
interface K8sProbe {
  httpGet?: { path: string; port: string | number };
  periodSeconds?: number;
  failureThreshold?: number;
  timeoutSeconds?: number;
}
interface K8sPodSpec {
  containers: K8sContainer[];
  volumes?: {
    name: string;
    emptyDir?: object;
    secret?: SecretSource & { secretName: string };
    projected?: { sources: { secret?: SecretSource & { name: string } }[] };
    configMap?: object;
  }[];
  securityContext?: { runAsUser?: number; runAsGroup?: number; runAsNonRoot?: boolean };
  terminationGracePeriodSeconds?: number;
}
interface Manifest {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec?: { template?: { spec: K8sPodSpec } };
  data?: Record<string, string>;
}

let helmPath: Promise<string> | undefined;

/** The pinned Helm (built once into .cache/tools by scripts/deploy-tools.mjs; asked once per test run). */
function helm(): Promise<string> {
  helmPath ??= run(process.execPath, [join(repoRoot(), 'scripts', 'deploy-tools.mjs')], {
    maxBuffer: 1024 * 1024,
  }).then(({ stdout }) => (JSON.parse(stdout) as { helm: string }).helm);
  return helmPath;
}

/** The services the chart installs: one values file each in deploy/values (name → file). */
export function chartServices(): { name: string; file: string; devOnly: boolean; deployStep: boolean }[] {
  const dir = join(repoRoot(), 'deploy', 'values');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => {
      const values = parse(readFileSync(join(dir, f), 'utf8')) as {
        service: { name: string; devOnly?: boolean };
        deployStep?: { enabled?: boolean };
      };
      return {
        name: values.service.name,
        file: join(dir, f),
        devOnly: values.service.devOnly === true,
        deployStep: values.deployStep?.enabled === true,
      };
    });
}

/**
 * Renders a service's release as `helm upgrade --install` would (its values file, then the environment's values,
 * then `overrides`), and answers its containers: the deploy-step Job's (if any) and the Deployment's.
 */
export async function renderContainers(
  service: { name: string; file: string; devOnly: boolean },
  environment: object,
  overrides: object,
  secrets: Secrets,
): Promise<{ job?: ContainerSpec; deployment: ContainerSpec }> {
  const dir = mkdtempSync(join(tmpdir(), 'mds-chart-'));
  try {
    writeFileSync(join(dir, 'environment.yaml'), stringify(environment));
    writeFileSync(join(dir, 'overrides.yaml'), stringify(overrides));
    const args = ['template', service.name, join(repoRoot(), 'deploy', 'chart'), '--namespace', 'mds'];
    // The Kubernetes version the deploy tests render for (the chart needs >= 1.27).
    args.push('--kube-version', '1.32.0');
    for (const file of [service.file, join(dir, 'environment.yaml'), join(dir, 'overrides.yaml')]) {
      args.push('-f', file);
    }
    if (service.devOnly) args.push('--set', 'devOnly.allowed=true');
    const { stdout } = await run(await helm(), args, { maxBuffer: 16 * 1024 * 1024 });
    const manifests = parseAllDocuments(stdout)
      .map((d) => d.toJS() as Manifest | null)
      .filter((m): m is Manifest => m !== null);
    const configMaps = new Map(
      manifests.filter((m) => m.kind === 'ConfigMap').map((m) => [m.metadata.name, m.data ?? {}]),
    );
    const one = (kind: 'Deployment' | 'Job') => {
      const found = manifests.filter((m) => m.kind === kind);
      if (found.length > 1) throw new ChartMismatch(`${service.name}: ${found.length} ${kind}s rendered`);
      return found[0] && containerSpec(service.name, kind, found[0], configMaps, secrets);
    };
    const deployment = one('Deployment');
    if (!deployment) throw new ChartMismatch(`${service.name}: the chart rendered no Deployment`);
    const job = one('Job');
    return job ? { job, deployment } : { deployment };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function containerSpec(
  release: string,
  kind: 'Deployment' | 'Job',
  manifest: Manifest,
  configMaps: Map<string, Record<string, string>>,
  secrets: Secrets,
): ContainerSpec {
  const pod = manifest.spec?.template?.spec;
  const where = `${release} ${kind} ${manifest.metadata.name}`;
  if (!pod || pod.containers.length !== 1) throw new ChartMismatch(`${where}: expected one container`);
  const c = pod.containers[0]!;
  if (c.command) throw new ChartMismatch(`${where}: sets command, which would replace the image's tini`);
  const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
  const emptyDirs: string[] = [];
  const secretDirs: ContainerSpec['secretDirs'] = [];
  for (const mount of c.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    if (!volume) throw new ChartMismatch(`${where}: mounts volume "${mount.name}", which the pod lacks`);
    if (volume.emptyDir) {
      emptyDirs.push(mount.mountPath);
    } else if (volume.secret || volume.projected) {
      const sources = volume.secret
        ? [{ ...volume.secret, name: volume.secret.secretName }]
        : volume.projected!.sources.flatMap((source) => (source.secret ? [source.secret] : []));
      const files: Record<string, string> = {};
      for (const source of sources) Object.assign(files, secretFiles(where, source, secrets));
      secretDirs.push({ mountPath: mount.mountPath, files });
    } else {
      throw new ChartMismatch(
        `${where}: volume "${mount.name}" is neither an emptyDir nor Secrets (not supported here)`,
      );
    }
  }
  const user = c.securityContext?.runAsUser ?? pod.securityContext?.runAsUser;
  if (user === undefined || pod.securityContext?.runAsNonRoot !== true) {
    throw new ChartMismatch(`${where}: no non-root user`);
  }
  const probe = (p: K8sProbe | undefined): Probe | undefined =>
    p?.httpGet && {
      path: p.httpGet.path,
      port: String(p.httpGet.port),
      periodSeconds: p.periodSeconds ?? 10,
      failureThreshold: p.failureThreshold ?? 3,
      timeoutSeconds: p.timeoutSeconds ?? 1,
    };
  const probes: ContainerSpec['probes'] = {};
  const startup = probe(c.startupProbe);
  const liveness = probe(c.livenessProbe);
  const readiness = probe(c.readinessProbe);
  if (startup) probes.startup = startup;
  if (liveness) probes.liveness = liveness;
  if (readiness) probes.readiness = readiness;
  const preStop = c.lifecycle?.preStop?.exec?.command;
  return {
    release,
    kind,
    name: c.name,
    image: c.image,
    args: c.args ?? [],
    env: resolveEnv(where, c, configMaps, secrets),
    user: `${user}:${pod.securityContext?.runAsGroup ?? user}`,
    readOnlyRootFilesystem: c.securityContext?.readOnlyRootFilesystem === true,
    dropAllCapabilities: c.securityContext?.capabilities?.drop?.includes('ALL') === true,
    noNewPrivileges: c.securityContext?.allowPrivilegeEscalation === false,
    emptyDirs,
    secretDirs,
    ports: c.ports ?? [],
    probes,
    terminationGracePeriodSeconds: pod.terminationGracePeriodSeconds ?? 30,
    ...(preStop ? { preStop } : {}),
  };
}

/** The files a Secret volume source gives (all keys, or its items), as the kubelet writes them. */
function secretFiles(
  where: string,
  source: SecretSource & { name: string },
  secrets: Secrets,
): Record<string, string> {
  const data = secrets[source.name];
  if (!data) {
    if (source.optional) return {};
    throw new ChartMismatch(`${where}: mounts Secret ${source.name}, not given`);
  }
  if (!source.items) return { ...data };
  const files: Record<string, string> = {};
  for (const item of source.items) {
    const value = data[item.key];
    if (value !== undefined) files[item.path] = value;
    else if (!source.optional)
      throw new ChartMismatch(`${where}: needs Secret ${source.name} key ${item.key}, not given`);
  }
  return files;
}

/**
 * The container's environment as the kubelet makes it: `envFrom` ConfigMaps first, then `env` in order, values
 * from Secrets, `$(NAME)` replaced by variables defined before. A missing ConfigMap or Secret (not optional) is
 * an error naming it, as the kubelet refuses to start such a container.
 */
function resolveEnv(
  where: string,
  c: K8sContainer,
  configMaps: Map<string, Record<string, string>>,
  secrets: Secrets,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const name = from.configMapRef?.name;
    const data = name === undefined ? undefined : configMaps.get(name);
    if (!data) throw new ChartMismatch(`${where}: envFrom refers to ConfigMap "${name}", not rendered`);
    Object.assign(env, data);
  }
  for (const entry of c.env ?? []) {
    const ref = entry.valueFrom?.secretKeyRef;
    if (ref) {
      const value = secrets[ref.name]?.[ref.key];
      if (value !== undefined) env[entry.name] = value;
      else if (!ref.optional) {
        throw new ChartMismatch(`${where}: ${entry.name} needs Secret ${ref.name} key ${ref.key}, not given`);
      }
      continue;
    }
    env[entry.name] = (entry.value ?? '').replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) =>
      name in env ? env[name]! : whole,
    );
  }
  return env;
}
