// The tools the deploy tests need, built once into .cache/tools, and printed as JSON ({ helm, kubeStrict }):
// - Helm, pinned, built from its Go module through the Go module proxy (no release binary is downloaded);
// - kube-strict (deploy/tools/kube-strict), which decodes manifests into the Kubernetes API's Go types with
//   strict field validation, as the API server does.
// Building needs a Go toolchain; the first build takes a few minutes, later ones reuse Go's caches.
// MDS_HELM names another Helm 3 binary to use instead of building one.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export const HELM_VERSION = 'v3.21.4';

const root = join(import.meta.dirname, '..');
const tools = join(root, '.cache', 'tools');
const kubeStrictSource = join(root, 'deploy', 'tools', 'kube-strict');

function log(line) {
  console.error(`[deploy-tools] ${line}`);
}

function requireGo(what) {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    throw new Error(`no ${what} in ${tools} and no Go toolchain to build it: install Go (1.26 or later)`);
  }
}

/** Runs `build(stagingDir)` and moves the result to `dir` only when it succeeded. */
function buildInto(dir, build) {
  mkdirSync(tools, { recursive: true });
  const staging = mkdtempSync(join(tools, 'build-'));
  try {
    build(staging);
    chmodSync(staging, 0o755);
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

const goEnv = (extra) => ({ ...process.env, CGO_ENABLED: '0', ...extra });

function helm() {
  if (process.env.MDS_HELM) return process.env.MDS_HELM;
  const dir = join(tools, `helm-${HELM_VERSION}`);
  const binary = join(dir, 'helm');
  if (existsSync(binary)) return binary;
  requireGo(`Helm ${HELM_VERSION}`);
  log(`building Helm ${HELM_VERSION} from its Go module (once; a few minutes)`);
  buildInto(dir, (staging) =>
    execFileSync(
      'go',
      [
        'install',
        '-trimpath',
        `-ldflags=-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`,
        `helm.sh/helm/v3/cmd/helm@${HELM_VERSION}`,
      ],
      { stdio: ['ignore', 'inherit', 'inherit'], env: goEnv({ GOBIN: staging }) },
    ),
  );
  return binary;
}

function kubeStrict() {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(readFileSync(join(kubeStrictSource, file)));
  const dir = join(tools, `kube-strict-${hash.digest('hex').slice(0, 12)}`);
  const binary = join(dir, 'kube-strict');
  if (existsSync(binary)) return binary;
  requireGo('kube-strict');
  log('building kube-strict (deploy/tools/kube-strict) against the Kubernetes API types (once)');
  buildInto(dir, (staging) =>
    execFileSync('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', join(staging, 'kube-strict'), '.'], {
      cwd: kubeStrictSource,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: goEnv({}),
    }),
  );
  return binary;
}

try {
  console.log(JSON.stringify({ helm: helm(), kubeStrict: kubeStrict() }));
} catch (error) {
  log(error.message);
  process.exit(1);
}
