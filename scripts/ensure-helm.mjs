// Makes sure a Helm binary of the pinned version is in .cache/tools (the deploy tests render the chart with it)
// and prints its path. There is no download of release binaries here: Helm is built from its Go module
// through the Go module proxy (a few minutes the first time; Go's module and build caches make later runs
// quick), so a Go toolchain is needed once. MDS_HELM names another Helm 3 binary to use instead.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export const HELM_VERSION = 'v3.21.4';

const root = join(import.meta.dirname, '..');
const toolDir = join(root, '.cache', 'tools', `helm-${HELM_VERSION}`);
const helm = join(toolDir, 'helm');

function log(line) {
  console.error(`[ensure-helm] ${line}`);
}

function ensure() {
  if (process.env.MDS_HELM) return process.env.MDS_HELM;
  if (existsSync(helm)) return helm;
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    throw new Error(
      `no Helm at ${helm} and no Go toolchain to build it: install Go (1.25 or later) or set MDS_HELM to a Helm 3 binary`,
    );
  }
  log(`building Helm ${HELM_VERSION} from its Go module into ${toolDir} (once; takes a few minutes)`);
  mkdirSync(join(root, '.cache', 'tools'), { recursive: true });
  const staging = mkdtempSync(join(root, '.cache', 'tools', 'helm-build-'));
  try {
    execFileSync(
      'go',
      [
        'install',
        '-trimpath',
        `-ldflags=-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`,
        `helm.sh/helm/v3/cmd/helm@${HELM_VERSION}`,
      ],
      { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, GOBIN: staging, CGO_ENABLED: '0' } },
    );
    rmSync(toolDir, { recursive: true, force: true });
    chmodSync(staging, 0o755);
    renameSync(staging, toolDir);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return helm;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    console.log(ensure());
  } catch (error) {
    log(error.message);
    process.exit(1);
  }
}

export { ensure as ensureHelm };
