// schemathesis (PyPI), pinned, in a virtual environment of its own under the repository's .cache: `.ci/run` runs
// this once; the gateway's schemathesis test finds it there (and installs it the same way when it is missing).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SCHEMATHESIS_VERSION = '4.32.5';
const repo = join(dirname(fileURLToPath(import.meta.url)), '../../..');
export const venv = join(repo, '.cache/schemathesis');
export const schemathesisBin = join(venv, 'bin/schemathesis');

function run(command, args) {
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
}

/** The path of the schemathesis executable, installed first when it is not there in the pinned version. */
export function ensureSchemathesis() {
  const installed =
    existsSync(schemathesisBin) &&
    spawnSync(schemathesisBin, ['--version'], { encoding: 'utf8' }).stdout?.includes(SCHEMATHESIS_VERSION);
  if (!installed) {
    // Debian's python3 needs python3-venv for this (.ci/run installs it).
    run('python3', ['-m', 'venv', venv]);
    run(join(venv, 'bin/pip'), [
      'install',
      '--quiet',
      '--disable-pip-version-check',
      `schemathesis==${SCHEMATHESIS_VERSION}`,
    ]);
  }
  return schemathesisBin;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(`[schemathesis] ${ensureSchemathesis()}`);
}
