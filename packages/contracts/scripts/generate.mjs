// Generates TypeScript from proto/ with buf and ts-proto into src/gen (never committed).
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
rmSync(join(here, 'src/gen'), { recursive: true, force: true });
execFileSync(join(here, '../../node_modules/.bin/buf'), ['generate'], { cwd: here, stdio: 'inherit' });
