// mds-admin run as a person runs it: the linked bin (node_modules/.bin/mds-admin), spawned, with its exit code and
// both streams. By default the bin loads the CLI's sources (--conditions=@mds/source with tsx), so tests never run
// a stale build; `built: true` runs it exactly as installed.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';

export const REPOSITORY = join(import.meta.dirname, '..', '..', '..');
export const MDS_ADMIN = join(REPOSITORY, 'node_modules', '.bin', 'mds-admin');

export type Run = { code: number | null; stdout: string; stderr: string };

export function mdsAdmin(
  args: string[],
  options: { env?: Record<string, string>; input?: string; bin?: string; built?: boolean } = {},
): Promise<Run> {
  const env = {
    // The bin's `#!/usr/bin/env node` finds the Node running the tests.
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    ...(options.built ? {} : { NODE_OPTIONS: '--conditions=@mds/source --import tsx' }),
    ...options.env,
  };
  return new Promise((resolve, reject) => {
    const child = spawn(options.bin ?? MDS_ADMIN, args, { cwd: REPOSITORY, env, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}
