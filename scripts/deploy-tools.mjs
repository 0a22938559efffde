// The tools the deploy tests need, built once into .cache/tools, and printed as JSON ({ helm, kubeStrict }):
// - Helm, pinned, built from its Go module through the Go module proxy (no release binary is downloaded);
// - kube-strict (deploy/tools/kube-strict), which decodes manifests into the Kubernetes API's Go types with
//   strict field validation, as the API server does.
// Building needs a Go toolchain; the first build takes a few minutes, later ones reuse Go's caches.
// Any Go from 1.21 switches to the newer toolchain the modules ask for (GOTOOLCHAIN=auto, through the Go module
// proxy). An older Go (Debian 12's golang-go is 1.19) knows no such switch and cannot even read the modules'
// go.mod; it can still download the toolchain module the switch would fetch, so that one is used instead.
// MDS_HELM names another Helm 3 binary to use instead of building one.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { join } from 'node:path';

export const HELM_VERSION = 'v3.21.4';
/** The toolchain fetched for a Go too old to switch by itself (kube-strict's go.mod needs 1.26). */
export const GO_TOOLCHAIN = 'go1.26.8';

const root = join(import.meta.dirname, '..');
const tools = join(root, '.cache', 'tools');
const kubeStrictSource = join(root, 'deploy', 'tools', 'kube-strict');

function log(line) {
  console.error(`[deploy-tools] ${line}`);
}

/** The Go command to build with, and its environment; resolved once, only when something must be built. */
let go;
function goCommand(what) {
  if (go) return go;
  let version;
  try {
    version = execFileSync('go', ['version'], {
      encoding: 'utf8',
      env: { ...process.env, GOTOOLCHAIN: 'local' },
    });
  } catch {
    throw new Error(
      `no ${what} in ${tools} and no Go toolchain to build it: install Go (e.g. apt-get install golang-go)`,
    );
  }
  const minor = Number(/\bgo1\.(\d+)/.exec(version)?.[1] ?? 0);
  // GOTOOLCHAIN=auto unless set otherwise: the Go at hand fetches the toolchain a module needs.
  const env = { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: process.env.GOTOOLCHAIN || 'auto' };
  if (minor >= 21) return (go = { command: 'go', env });
  log(
    `${version.trim()} cannot switch toolchains: fetching ${GO_TOOLCHAIN} through the Go module proxy (once)`,
  );
  const goos = execFileSync('go', ['env', 'GOOS'], { encoding: 'utf8' }).trim();
  const goarch = execFileSync('go', ['env', 'GOARCH'], { encoding: 'utf8' }).trim();
  mkdirSync(tools, { recursive: true });
  // Outside any module (the repository has no go.mod); GOFLAGS cleared so -mod settings do not interfere. On
  // failure `go mod download -json` still prints the module, with the reason in Error.
  let output;
  try {
    output = execFileSync(
      'go',
      ['mod', 'download', '-json', `golang.org/toolchain@v0.0.1-${GO_TOOLCHAIN}.${goos}-${goarch}`],
      {
        cwd: tools,
        encoding: 'utf8',
        env: { ...process.env, GOFLAGS: '' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
  } catch (failure) {
    output = failure.stdout || '{}';
  }
  const { Dir: dir, Error: error } = JSON.parse(output);
  if (!dir) throw new Error(`could not fetch the Go toolchain ${GO_TOOLCHAIN}: ${error}`);
  // Module zips keep no executable bits: give them back, as Go's own toolchain switch does.
  const tool = join(dir, 'pkg', 'tool', `${goos}_${goarch}`);
  for (const file of readdirSync(join(dir, 'bin'))) chmodSync(join(dir, 'bin', file), 0o555);
  for (const file of readdirSync(tool)) chmodSync(join(tool, file), 0o555);
  // The fetched toolchain finds its own GOROOT from where it lies; an inherited one would be the old Go's.
  delete env.GOROOT;
  return (go = { command: join(dir, 'bin', 'go'), env });
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

function helm() {
  if (process.env.MDS_HELM) return process.env.MDS_HELM;
  const dir = join(tools, `helm-${HELM_VERSION}`);
  const binary = join(dir, 'helm');
  if (existsSync(binary)) return binary;
  const { command, env } = goCommand(`Helm ${HELM_VERSION}`);
  log(`building Helm ${HELM_VERSION} from its Go module (once; a few minutes)`);
  buildInto(dir, (staging) =>
    execFileSync(
      command,
      [
        'install',
        '-trimpath',
        `-ldflags=-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`,
        `helm.sh/helm/v3/cmd/helm@${HELM_VERSION}`,
      ],
      { stdio: ['ignore', 'inherit', 'inherit'], env: { ...env, GOBIN: staging } },
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
  const { command, env } = goCommand('kube-strict');
  log('building kube-strict (deploy/tools/kube-strict) against the Kubernetes API types (once)');
  buildInto(dir, (staging) =>
    execFileSync(command, ['build', '-trimpath', '-ldflags=-s -w', '-o', join(staging, 'kube-strict'), '.'], {
      cwd: kubeStrictSource,
      stdio: ['ignore', 'inherit', 'inherit'],
      env,
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
