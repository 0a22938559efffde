import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes, generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createDatabase, repoRoot } from '@mds/local-infra';
import { testInfra, uniqueName } from '@mds/local-infra/testing';
import { Sandbox } from '../sandbox.js';
import { chartServices, renderContainers, type ContainerSpec, type Secrets } from './chart.js';
import { ComposeStack } from './compose.js';
import { HOST_LOOPBACK, podmanEnv, ServicePod } from './pod.js';

const run = promisify(execFile);

/**
 * Whether the containers test runs: MDS_CONTAINERS_TEST=off skips it, and so does a machine without podman
 * (the test runs its containers in a podman pod). `full` adds the compose stack.
 */
export function containersTestMode(): 'off' | 'short' | 'full' {
  const mode = process.env.MDS_CONTAINERS_TEST ?? 'short';
  if (mode === 'off') return 'off';
  const probe = spawnSync('podman', ['info', '--format', '{{.Version.Version}}'], { stdio: 'ignore' });
  if (probe.status !== 0) return 'off';
  return mode === 'full' ? 'full' : 'short';
}

/** The tag the test builds and runs: one per checkout, so worktrees on one machine do not share images. */
export function testImageTag(): string {
  return `test-${createHash('sha256').update(repoRoot()).digest('hex').slice(0, 8)}`;
}

/** The compose project of the full test: one per checkout, like the tag. */
export const composeProject = (tag: string) => `mds-compose-${tag}`;

/** `npm run image -- --all --engine podman --tag <tag> ...`, answering what it wrote to stderr. */
async function imageScript(tag: string, ...options: string[]): Promise<string> {
  const { stderr } = await run(
    process.execPath,
    [join(repoRoot(), 'scripts', 'image.mjs'), '--all', '--engine', 'podman', '--tag', tag, ...options],
    { cwd: repoRoot(), maxBuffer: 64 * 1024 * 1024, env: await podmanEnv() },
  );
  return stderr;
}

/** `npm run image -- --all` with podman: every image, from this checkout (cached layers make it quick). */
export function buildImages(tag: string): Promise<string> {
  return imageScript(tag);
}

/**
 * Removes what runs of this checkout made under its tag: their pods (with the containers and Secret files), the
 * compose project's containers and network, the images of the tag and the dangling images its builds left (build
 * stages, layers, images a later build took the tag from: `npm run image -- --remove`). The base image and the
 * layers other tags' images stand on stay, so the next build starts from them. Idempotent: the test runs it before
 * it builds (what a killed run left) and after its last test.
 */
export async function removeTestRun(tag: string): Promise<string> {
  await ServicePod.removeLeftovers(tag);
  await ComposeStack.removeLeftovers(composeProject(tag));
  return imageScript(tag, '--remove');
}

/**
 * The settings of a test cluster, beside each service's own values file (what an environment file holds). The
 * test run's broker has a plaintext listener and the pod's services talk over loopback: both TLS opt-outs
 * (deploy/README.md), as an environment with a network encrypted otherwise sets them.
 */
function testEnvironment(tag: string, topicPrefix: string, kafkaBrokers: string[]) {
  return {
    image: { registry: 'localhost', tag },
    kafka: { bootstrapServers: kafkaBrokers, topicPrefix, replicationFactor: 1, tls: { enabled: false } },
    internalGrpc: { tls: { enabled: false } },
    database: { urlSecret: { name: 'mds-test-postgres', key: 'uri' }, poolMax: 5 },
  };
}

/**
 * What a test cluster sets per service on top: the messengers are the simulator (as deploy/README says), bots
 * registered a moment ago are polled within a second, and the webhook dispatcher may deliver to this machine
 * (the company webhook receivers of the test), which its SSRF policy refuses otherwise.
 */
const SIMULATOR = 'http://messenger-simulator:8090';
const TEST_ENV: Record<string, Record<string, string>> = {
  'client-registry': { TELEGRAM_API_ROOT: SIMULATOR, MAX_API_BASE: SIMULATOR },
  'telegram-sender': { MESSENGER_API_BASE: SIMULATOR, BOTS_REFRESH_MS: '1000', UPDATES_POLL_TIMEOUT_S: '1' },
  'max-sender': { MESSENGER_API_BASE: SIMULATOR, BOTS_REFRESH_MS: '1000', UPDATES_POLL_TIMEOUT_S: '1' },
  'webhook-dispatcher': { WEBHOOK_SSRF_ALLOWLIST: `${HOST_LOOPBACK}/32` },
};

/** Start order: the simulator (the messengers), the registry (it owns the topics and answers gRPC), the rest. */
function startRank(name: string): number {
  return name === 'messenger-simulator' ? 0 : name === 'client-registry' ? 1 : 2;
}

export interface ContainerStack {
  pod: ServicePod;
  sandbox: Sandbox;
  jobs: ContainerSpec[];
  services: ContainerSpec[];
  /** Seconds each deploy-step Job took, and each service until its startup probe passed. */
  timings: Record<string, number>;
  service(name: string): ContainerSpec;
  stopAll(): Promise<void>;
}

/**
 * Every service of the chart in one pod, each container configured from its rendered release, against the
 * test run's broker and PostgreSQL: the deploy-step Jobs first (in start order, each to exit 0), then the
 * services, each waited for through its startup probe.
 */
export async function startContainerStack(tag: string): Promise<ContainerStack> {
  const infra = testInfra();
  const id = uniqueName('ctr').toLowerCase();
  const databaseUrl = await createDatabase(infra.databaseUrl, id);
  const adminToken = randomBytes(18).toString('base64url');
  const identity = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
  // Each caller of the registry has its own token; the registry gets their hashes.
  const callerTokens = Object.fromEntries(
    ['gateway', 'telegram-sender', 'max-sender', 'webhook-dispatcher', 'dashboard'].map((c) => [
      c,
      randomBytes(24).toString('base64url'),
    ]),
  );
  const secrets: Secrets = {
    ...Object.fromEntries(
      Object.entries(callerTokens).map(([caller, token]) => [`mds-grpc-${caller}`, { token }]),
    ),
    'mds-grpc-callers': {
      callers: Object.entries(callerTokens)
        .map(([caller, token]) => `${caller}:${createHash('sha256').update(token).digest('hex')}\n`)
        .join(''),
    },
    'mds-client-registry': {
      'admin-token': adminToken,
      'encryption-keys': `k1:${randomBytes(32).toString('base64')}`,
    },
    'mds-webhook-dispatcher': { 'admin-token': adminToken },
    'mds-gateway': { 'idempotency-fingerprint-keys': randomBytes(32).toString('base64url') },
    'mds-dashboard': { 'admin-token': adminToken },
    'mds-dashboard-identity': { 'signing-key': identity.d!, 'public-key': identity.x! },
    'mds-test-postgres': { uri: databaseUrl },
  };
  const environment = testEnvironment(tag, `${id}.`, infra.kafkaBrokers);
  // In a cluster every pod has its own ops port 9090; in the one pod here each service needs its own.
  const rendered = await Promise.all(
    chartServices().map(async (service, i) => ({
      name: service.name,
      ...(await renderContainers(
        service,
        environment,
        { env: TEST_ENV[service.name] ?? {}, ports: { ops: 9090 + i } },
        secrets,
      )),
    })),
  );
  rendered.sort((a, b) => startRank(a.name) - startRank(b.name) || a.name.localeCompare(b.name));
  const services = rendered.map((r) => r.deployment);
  const jobs = rendered.flatMap((r) => (r.job ? [r.job] : []));
  const ports = services.flatMap((s) => s.ports.map((p) => p.containerPort));
  const clash = ports.find((p, i) => ports.indexOf(p) !== i);
  if (clash !== undefined) {
    throw new Error(`two services listen on port ${clash}: the pod runs them in one network namespace`);
  }
  const forward = [...infra.kafkaBrokers, new URL(infra.databaseUrl).host].map((hostPort) =>
    Number(hostPort.split(':').at(-1)),
  );
  const pod = await ServicePod.create({
    name: id.replaceAll('_', '-'),
    owner: tag,
    containerPorts: ports,
    serviceNames: services.map((s) => s.release),
    forward,
    forwarderImage: services[0]!.image,
  });
  const timings: Record<string, number> = {};
  const byName = (name: string) => {
    const found = services.find((s) => s.release === name);
    if (!found) throw new Error(`no service "${name}" in the chart`);
    return found;
  };
  const stack: ContainerStack = {
    pod,
    jobs,
    services,
    timings,
    service: byName,
    sandbox: new Sandbox(
      { url: (name) => pod.url(byName(name).ports.find((p) => p.name === 'http')!.containerPort) },
      adminToken,
      HOST_LOOPBACK,
    ),
    stopAll: () => pod.remove(),
  };
  try {
    for (const job of jobs) {
      const began = Date.now();
      const code = await pod.runJob(job, job.terminationGracePeriodSeconds * 1000 + 300_000);
      if (code !== 0) {
        throw new Error(
          `the deploy step of ${job.release} exited with ${code}:\n${(await pod.logsOf(job)).slice(-3000)}`,
        );
      }
      timings[`${job.release} deploy step`] = (Date.now() - began) / 1000;
    }
    const startAll = async (group: ContainerSpec[]) => {
      await Promise.all(
        group.map(async (spec) => {
          const began = Date.now();
          await pod.start(spec);
          await pod.waitForProbe(spec, 'startup');
          timings[spec.release] = (Date.now() - began) / 1000;
        }),
      );
    };
    for (const rank of [0, 1, 2]) await startAll(services.filter((s) => startRank(s.release) === rank));
  } catch (error) {
    await pod.remove();
    throw error;
  }
  return stack;
}
