import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    helm: string;
    kubeStrict: string;
  }
}

/** The pinned Helm and kube-strict (built into .cache/tools the first time; see scripts/deploy-tools.mjs). */
export default function setup(project: TestProject): void {
  const script = join(import.meta.dirname, '..', '..', 'scripts', 'deploy-tools.mjs');
  const output = execFileSync(process.execPath, [script], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const tools = JSON.parse(output) as { helm: string; kubeStrict: string };
  project.provide('helm', tools.helm);
  project.provide('kubeStrict', tools.kubeStrict);
}
