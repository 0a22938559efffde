import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ofKind, podTemplate } from './checks.js';
import { environments, fileExists, renderService, root, serviceValues } from './support.js';

const run = promisify(execFile);
const services = serviceValues();
/** The workspace (services/<it>) a release's image is built from: one image may serve several releases. */
const workspaceOf = (service: (typeof services)[number]) => service.service.package.replace(/^@mds\//, '');
const pinnedNode = (
  JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: { node: string } }
).devDependencies.node;

/** The instructions of a Dockerfile, continuation lines joined, comments dropped. */
function instructions(path: string): { op: string; args: string }[] {
  return readFileSync(path, 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [op, ...rest] = line.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

const dockerfile = join(root, 'Dockerfile');

/** A service's image as its package.json declares it (what npm run image passes as build arguments). */
function declaredImage(name: string): { ports: number[] } | undefined {
  const manifest = JSON.parse(readFileSync(join(root, 'services', name, 'package.json'), 'utf8')) as {
    mds?: { image?: { ports: number[] } };
  };
  return manifest.mds?.image;
}

describe('the one Dockerfile', () => {
  const steps = instructions(dockerfile);
  const runtime = steps.slice(steps.map((s) => s.op).lastIndexOf('FROM'));

  it('builds any service, named by a build argument, from a pruned workspace with production dependencies only, on the pinned Node, slim', () => {
    const base = steps.find((s) => s.op === 'ARG' && s.args.startsWith('NODE_IMAGE='));
    // The Node the project pins (the `node` devDependency that npm scripts run on), not any Node 24.
    expect(base?.args).toBe(`NODE_IMAGE=docker.io/library/node:${pinnedNode}-trixie-slim`);
    expect(steps.filter((s) => s.op === 'FROM').every((s) => s.args.startsWith('${NODE_IMAGE}'))).toBe(true);
    // Every stage that names the service declares the argument (an ARG before FROM is not seen inside a stage).
    const stages = steps.reduce<{ op: string; args: string }[][]>((all, step) => {
      if (step.op === 'FROM') all.push([]);
      all.at(-1)?.push(step);
      return all;
    }, []);
    expect(stages.length).toBe(3);
    for (const stage of stages) expect(stage.some((s) => s.op === 'ARG' && s.args === 'SERVICE')).toBe(true);
    expect(steps.some((s) => s.op === 'RUN' && s.args.includes('prune "@mds/${SERVICE}" --docker'))).toBe(
      true,
    );
    expect(steps.some((s) => s.op === 'RUN' && s.args.includes('npm prune --omit=dev'))).toBe(true);
    // The workspaces only tests need are dropped before the install (with their dependencies).
    const prune = steps.find((s) => s.op === 'RUN' && s.args.includes(' prune "@mds/'))?.args ?? '';
    for (const part of ['json', 'full']) {
      expect(prune).toContain(`production-workspaces.mjs /pruned/${part} "@mds/\${SERVICE}" build`);
    }
    // Those the build only compiles against (optional peers) are dropped after it, before npm prune.
    const build = steps.find((s) => s.op === 'RUN' && s.args.includes('npm prune --omit=dev'))?.args ?? '';
    expect(build).toMatch(
      /turbo run build .*production-workspaces\.mjs \. "@mds\/\$\{SERVICE\}" run .*npm prune/s,
    );
  });

  it('installs only what the lockfile says: npm ci, and turbo from the lockfile, never fetched by name', () => {
    const runs = steps.filter((s) => s.op === 'RUN').map((s) => s.args);
    expect(runs.filter((r) => /\bnpm (install|i)\b|npx --yes|npx -y\b|turbo@/.test(r))).toEqual([]);
    expect(runs.filter((r) => r.includes('npm ci'))).toHaveLength(2);
    expect(runs).toContainEqual(expect.stringContaining('node locked-tool.mjs package-lock.json turbo .'));
    expect(runs.find((r) => r.includes(' prune "@mds/'))).toContain('/tools/node_modules/.bin/turbo prune');
  });

  it('takes turbo and its platform binaries from the lockfile, each with its integrity (npm ci checks it)', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'mds-locked-tool-'));
    try {
      await run(process.execPath, [
        join(root, 'scripts', 'images', 'locked-tool.mjs'),
        join(root, 'package-lock.json'),
        'turbo',
        folder,
      ]);
      const lock = JSON.parse(readFileSync(join(folder, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, { version?: string; integrity?: string; os?: string[] }>;
      };
      const root_ = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
        devDependencies: Record<string, string>;
      };
      expect(lock.packages['node_modules/turbo']?.version).toBe(root_.devDependencies.turbo);
      const linux = lock.packages['node_modules/@turbo/linux-64'];
      for (const entry of [lock.packages['node_modules/turbo']!, linux!])
        expect(entry.integrity).toMatch(/^sha512-/);
      // The folder is one npm ci takes as it is (offline: nothing asked of the registry to decide).
      await run('npm', ['ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
        cwd: folder,
      });
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('runs as an unprivileged user under an init process, with a health check on the service HTTP port', () => {
    expect(runtime.filter((s) => s.op === 'USER').at(-1)?.args).toBe('1000:1000');
    expect(runtime.find((s) => s.op === 'ENTRYPOINT')?.args).toBe('["/usr/bin/tini", "--"]');
    expect(runtime.find((s) => s.op === 'HEALTHCHECK')?.args).toContain("process.env.HTTP_PORT + '/healthz'");
    expect(runtime.find((s) => s.op === 'ENV')?.args).toContain('HTTP_PORT=${HTTP_PORT}');
    expect(runtime.filter((s) => s.op === 'WORKDIR').at(-1)?.args).toBe('/app/services/${SERVICE}');
    expect(runtime.find((s) => s.op === 'EXPOSE')?.args).toBe('${PORTS}');
    const labels = runtime
      .filter((s) => s.op === 'LABEL')
      .map((s) => s.args)
      .join(' ');
    for (const label of ['title', 'description', 'source', 'revision', 'version']) {
      expect(labels).toContain(`org.opencontainers.image.${label}=`);
    }
  });

  it('is the only one: no service keeps a Dockerfile of its own', () => {
    const own = readdirSync(join(root, 'services')).filter((name) =>
      fileExists(join(root, 'services', name, 'Dockerfile')),
    );
    expect(own).toEqual([]);
  });
});

describe.each(services.map((s) => [s.service.name, s] as const))('the image of %s', (release, service) => {
  const name = workspaceOf(service);
  const releases = services.filter((s) => workspaceOf(s) === name).length;

  it('declares the ports the chart gives its pod (HTTP first), and runs as the chart runs it', async () => {
    const image = declaredImage(name);
    expect(image, `services/${name}/package.json: mds.image`).toBeDefined();
    // The Dockerfile prunes to @mds/<SERVICE>: the workspace the chart's values name, its image mds/<SERVICE>.
    expect(
      fileExists(join(root, 'services', name, 'package.json')),
      `${release}: ${service.service.package}`,
    ).toBe(true);
    expect((service as { image?: { repository?: string } }).image?.repository).toBe(`mds/${name}`);
    const steps = instructions(dockerfile);
    const runtime = steps.slice(steps.map((s) => s.op).lastIndexOf('FROM'));
    const manifests = await renderService(service, environments()[0]!.file);
    const pod = podTemplate(ofKind(manifests, 'Deployment')[0]!).spec as {
      securityContext?: { runAsUser?: number };
      containers: { args?: string[]; ports?: { name?: string; containerPort: number }[] }[];
    };
    // The chart passes args (the image's CMD), never command: tini stays PID 1.
    expect(JSON.parse(runtime.find((s) => s.op === 'CMD')!.args)).toEqual(pod.containers[0]!.args);
    expect(pod.securityContext?.runAsUser).toBe(1000);
    const ports = pod.containers[0]!.ports ?? [];
    for (const port of ports) expect(image!.ports).toContain(port.containerPort);
    // An image of one release listens on its HTTP port by default; one of several (the sender, one release per
    // messenger) is told it by the chart (HTTP_PORT from ports.http).
    if (releases === 1) expect(image!.ports[0]).toBe(ports.find((p) => p.name === 'http')?.containerPort);
    if (service.deployStep?.enabled) {
      expect(fileExists(join(root, 'services', name, 'src', 'deploy-step.ts'))).toBe(true);
    }
  });

  it('prunes to a workspace that holds the service and a lockfile', async () => {
    const out = mkdtempSync(join(tmpdir(), 'mds-prune-'));
    try {
      await run(
        join(root, 'node_modules', '.bin', 'turbo'),
        ['prune', service.service.package, '--docker', '--out-dir', out],
        {
          cwd: root,
        },
      );
      expect(fileExists(join(out, 'json', 'services', name, 'package.json'))).toBe(true);
      expect(fileExists(join(out, 'json', 'package-lock.json'))).toBe(true);
      expect(fileExists(join(out, 'full', 'services', name, 'src', 'main.ts'))).toBe(true);
      // As the image's build stage takes it: the production workspaces, then npm ci, which refuses a lockfile
      // out of step with the package.json files (offline and dry: the test decides, nothing is installed).
      await run(process.execPath, [
        join(root, 'scripts', 'images', 'production-workspaces.mjs'),
        join(out, 'json'),
        service.service.package,
        'build',
      ]);
      await run('npm', ['ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
        cwd: join(out, 'json'),
      });
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

describe('every deployable service', () => {
  it('has a values file for the chart and an image (a new service is not forgotten)', () => {
    const deployable = readdirSync(join(root, 'services'))
      .filter((name) => fileExists(join(root, 'services', name, 'src', 'main.ts')))
      .sort();
    expect(deployable.length).toBeGreaterThan(0);
    expect([...new Set(services.map(workspaceOf))].sort()).toEqual(deployable);
    for (const s of services) expect(s.file.endsWith(`/values/${s.service.name}.yaml`), s.file).toBe(true);
    for (const name of deployable) expect(declaredImage(name), name).toBeDefined();
  });
});

describe('npm run image', () => {
  const script = join(root, 'scripts', 'image.mjs');

  it('says plainly when no container engine can build, and how to build elsewhere', async () => {
    // A PATH with node only: no docker, podman or buildah.
    const error = await run(process.execPath, [script, 'gateway'], {
      env: { PATH: join(root, 'node_modules', '.bin', 'no-such-dir') },
    }).catch((e: unknown) => e as { code: number; stderr: string });
    expect(error).toMatchObject({ code: 3 });
    expect((error as { stderr: string }).stderr).toMatch(/no container engine can build here/);
    expect((error as { stderr: string }).stderr).toContain(
      "docker build -f Dockerfile -t mds/gateway:dev --build-arg SERVICE=gateway --build-arg HTTP_PORT=8080 --build-arg 'PORTS=8080 9090' ",
    );
  });

  it('refuses a service without an image, naming those with one', async () => {
    const error = await run(process.execPath, [script, 'nope']).catch(
      (e: unknown) => e as { code: number; stderr: string },
    );
    expect(error).toMatchObject({ code: 2 });
    expect((error as { stderr: string }).stderr).toContain('client-registry, dashboard, gateway');
  });

  it('builds from the repository root with the one Dockerfile and the service as build arguments, labelled, keeping the HEALTHCHECK', async () => {
    const { stdout } = await run(process.execPath, [
      script,
      'client-registry',
      '--print',
      '--engine',
      'podman',
      '--tag',
      '1.2.3',
    ]);
    // podman writes OCI images by default, which drop HEALTHCHECK: docker format keeps it.
    expect(stdout.trim()).toMatch(
      /^podman build --format docker -f Dockerfile -t mds\/client-registry:1\.2\.3 --build-arg SERVICE=client-registry --build-arg HTTP_PORT=8081 --build-arg 'PORTS=8081 50051 9090' --build-arg 'MDS_DESCRIPTION=Companies, [^']+' --build-arg MDS_VERSION=1\.2\.3 --build-arg MDS_REVISION=([0-9a-f]{40}(-dirty)?)( --build-arg MDS_SOURCE=\S+)? --label org\.opencontainers\.image\.revision=\1 --label org\.opencontainers\.image\.version=1\.2\.3( --label org\.opencontainers\.image\.source=\S+)? \.$/,
    );
  });

  it('builds every service with an image with --all (a new service is picked up by declaring one)', async () => {
    const { stdout } = await run(process.execPath, [script, '--all', '--print', '--engine', 'docker']);
    const built = stdout
      .trim()
      .split('\n')
      .map((line) => /-f Dockerfile .*--build-arg SERVICE=([\w-]+) /.exec(line)?.[1]);
    const withImage = readdirSync(join(root, 'services'))
      .filter((name) => fileExists(join(root, 'services', name, 'package.json')) && declaredImage(name))
      .sort();
    expect(built).toEqual(withImage);
    expect(stdout).not.toContain('--format');
  });

  it('refuses both --all and a service, and neither', async () => {
    for (const args of [['--all', 'gateway'], []]) {
      const error = await run(process.execPath, [script, ...args]).catch(
        (e: unknown) => e as { code: number; stderr: string },
      );
      expect(error).toMatchObject({ code: 2 });
      expect((error as { stderr: string }).stderr).toContain('usage: npm run image');
    }
  });
});
