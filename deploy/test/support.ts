import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments, parse } from 'yaml';
import { inject } from 'vitest';

export const root = join(import.meta.dirname, '..', '..');
export const chart = join(root, 'deploy', 'chart');
export const valuesDir = join(root, 'deploy', 'values');
export const examplesDir = join(valuesDir, 'examples');

/** The Kubernetes version manifests are rendered for (the chart needs >= 1.27). */
export const KUBE_VERSION = '1.32.0';

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface ServiceValues {
  file: string;
  service: {
    name: string;
    package: string;
    devOnly?: boolean;
    configModule?: string;
    configExport?: string;
  };
  deployStep?: { enabled?: boolean };
  autoscaling?: { enabled?: boolean };
  [key: string]: unknown;
}

/** Every service the chart installs: one values file each in deploy/values. */
export function serviceValues(): ServiceValues[] {
  return readdirSync(valuesDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => ({
      file: join(valuesDir, f),
      ...(parse(readFileSync(join(valuesDir, f), 'utf8')) as object),
    }))
    .map((v) => v as ServiceValues);
}

/** The environments the tests render every service for. */
export function environments(): { name: string; file: string }[] {
  return readdirSync(examplesDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => ({ name: f.replace(/\.yaml$/, ''), file: join(examplesDir, f) }));
}

const run = promisify(execFile);

export class RenderError extends Error {
  override readonly name = 'RenderError';
}

/** `helm template` of one service's release, every document parsed (hooks included). */
export async function render(
  release: string,
  valueFiles: string[],
  set: Record<string, string> = {},
): Promise<Manifest[]> {
  const args = ['template', release, chart, '--namespace', 'mds', '--kube-version', KUBE_VERSION];
  for (const file of valueFiles) args.push('-f', file);
  for (const [key, value] of Object.entries(set)) args.push('--set', `${key}=${value}`);
  let stdout: string;
  try {
    ({ stdout } = await run(inject('helm'), args, { maxBuffer: 16 * 1024 * 1024 }));
  } catch (error) {
    throw new RenderError((error as { stderr?: string }).stderr?.trim() || String(error));
  }
  return parseAllDocuments(stdout)
    .map((doc) => {
      if (doc.errors.length > 0) throw new RenderError(`invalid YAML: ${doc.errors[0]!.message}`);
      return doc.toJS() as Manifest | null;
    })
    .filter((m): m is Manifest => m !== null);
}

/** `helm lint --strict` of one service's release: the chart's own rules, warnings counted as errors. */
export async function lint(valueFiles: string[], set: Record<string, string> = {}): Promise<string> {
  const args = ['lint', chart, '--strict', '--kube-version', KUBE_VERSION];
  for (const file of valueFiles) args.push('-f', file);
  for (const [key, value] of Object.entries(set)) args.push('--set', `${key}=${value}`);
  try {
    return (await run(inject('helm'), args)).stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new RenderError(`${stdout ?? ''}${stderr ?? ''}`.trim() || String(error));
  }
}

/** Renders a service the way the README installs it: its values file, then an environment's. */
export function renderService(
  service: ServiceValues,
  environmentFile: string,
  set: Record<string, string> = {},
) {
  return render(service.service.name, [service.file, environmentFile], {
    ...(service.service.devOnly ? { 'devOnly.allowed': 'true' } : {}),
    ...set,
  });
}

export function fileExists(path: string): boolean {
  return existsSync(path);
}
