import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ofKind } from './checks.js';
import { environments, renderService, root, serviceValues } from './support.js';

/** Every metric the code registers (prom-client `name: 'mds_...'`), from the sources of packages and services. */
function metricsInCode(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (entry === 'node_modules' || entry === 'gen' || entry === 'dist') continue;
      if (statSync(path).isDirectory()) walk(path);
      else if (entry.endsWith('.ts') && !entry.includes('.test.')) {
        for (const match of readFileSync(path, 'utf8').matchAll(/name: '(mds_[a-z0-9_]+)'/g))
          names.add(match[1]!);
      }
    }
  };
  for (const top of ['packages', 'services']) {
    for (const workspace of readdirSync(join(root, top))) {
      const src = join(root, top, workspace, 'src');
      try {
        walk(src);
      } catch {
        // a workspace without src
      }
    }
  }
  return names;
}

const inCode = metricsInCode();
const readme = readFileSync(join(root, 'deploy', 'README.md'), 'utf8');

describe('metrics and alerts', () => {
  it('every metric a service exports is explained in deploy/README.md', () => {
    expect(inCode.size).toBeGreaterThan(5);
    expect([...inCode].filter((name) => !readme.includes(`\`${name}\``))).toEqual([]);
  });

  it('every alert is about a metric that exists and is explained in deploy/README.md', async () => {
    const [environment] = environments().filter((e) => e.name === 'environment');
    for (const service of serviceValues()) {
      const manifests = await renderService(service, environment!.file);
      const [rule] = ofKind(manifests, 'PrometheusRule');
      const rules = (rule?.spec as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap(
        (g) => g.rules,
      );
      expect(rules.length).toBeGreaterThan(0);
      for (const { alert, expr } of rules) {
        for (const [metric] of expr.matchAll(/\bmds_[a-z0-9_]+/g)) {
          expect(inCode, `${alert} uses ${metric}`).toContain(metric.replace(/_(bucket|count|sum)$/, ''));
        }
        expect(readme, `${alert} is explained in deploy/README.md`).toContain(`\`${alert}\``);
      }
    }
  });
});
