// Records the current proto/ as the baseline the breaking-change check compares against.
// Run it after an additive change has landed, so the next change is checked against it.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
execFileSync(join(root, 'node_modules/.bin/buf'), ['build', 'proto', '-o', 'proto/compat/baseline.binpb'], {
  cwd: root,
  stdio: 'inherit',
});
