import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    helm: string;
  }
}

/** The pinned Helm binary (built into .cache/tools the first time; see scripts/ensure-helm.mjs). */
export default function setup(project: TestProject): void {
  const script = join(import.meta.dirname, '..', '..', 'scripts', 'ensure-helm.mjs');
  const helm = execFileSync(process.execPath, [script], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  project.provide('helm', helm.trim());
}
