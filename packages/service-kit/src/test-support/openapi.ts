// Checks every service runs on its OpenAPI documents: Redocly CLI's lint, offline, and that every route of an
// express router is a documented operation.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Router } from 'express';

// Our services' documents carry no public licence (a company runs them for its own integrators).
const DEFAULT_CONFIG = 'extends:\n  - recommended\nrules:\n  info-license: off\n';

/** `redocly lint` of a document (with a redocly.yaml when given, else the recommended rules): its exit and output. */
export function redoclyLint(document: object, config?: string): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mds-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    writeFileSync(join(dir, 'redocly.yaml'), DEFAULT_CONFIG);
    const cli = join(
      dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')),
      'bin/cli.js',
    );
    const lint = spawnSync(
      process.execPath,
      [cli, 'lint', file, '--format', 'stylish', '--config', config ?? join(dir, 'redocly.yaml')],
      {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      },
    );
    return { status: lint.status, output: `${lint.stdout}\n${lint.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `METHOD /path/{param}` of every route of an express router (its `:param` written the OpenAPI way). */
export function routesOf(router: Router): string[] {
  type Layer = { route?: { path: string; methods: Record<string, boolean> } };
  return (router.stack as Layer[]).flatMap((layer) =>
    layer.route
      ? Object.keys(layer.route.methods)
          .filter((m) => m !== '_all')
          .map((m) => `${m.toUpperCase()} ${layer.route!.path.replace(/:(\w+)/g, '{$1}')}`)
      : [],
  );
}

/** `METHOD /path` of every operation of a document's paths. */
export function operationsOf(document: { paths?: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
  );
}
