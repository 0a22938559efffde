import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ofKind } from './checks.js';
import { environments, renderService, root, serviceValues } from './support.js';

const run = promisify(execFile);

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

/** The metrics every service has besides its own: prom-client's defaults (process_*, nodejs_*), and Prometheus's up. */
async function defaultMetrics(): Promise<Set<string>> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return new Set([...(await registry.getMetricsAsJSON()).map((m) => m.name), 'up']);
}

/**
 * `promtool check rules` (Prometheus's own parser and checks) on rule groups; promtool comes with Debian's
 * prometheus package (.ci/run installs it). Returns its output; throws with it when the rules are refused.
 */
async function promtoolCheckRules(groups: unknown): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'mds-promtool-'));
  try {
    const file = join(dir, 'rules.yaml');
    writeFileSync(file, stringify({ groups }));
    const { stdout, stderr } = await run('promtool', ['check', 'rules', file]).catch((error: unknown) => {
      const {
        code,
        stdout = '',
        stderr = '',
      } = error as { code?: string | number; stdout?: string; stderr?: string };
      if (code === 'ENOENT')
        throw new Error('promtool is not installed: apt-get install prometheus (see .ci/run)');
      throw new Error(`promtool refused the rules:\n${stdout}${stderr}`);
    });
    return stdout + stderr;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('promtool check rules', () => {
  it('passes every rendered PrometheusRule', async () => {
    const [environment] = environments().filter((e) => e.name === 'environment');
    for (const service of serviceValues()) {
      const manifests = await renderService(service, environment!.file);
      const [rule] = ofKind(manifests, 'PrometheusRule');
      const { groups } = rule!.spec as { groups: { rules: unknown[] }[] };
      const output = await promtoolCheckRules(groups);
      const count = groups.reduce((n, g) => n + g.rules.length, 0);
      expect(output, service.service.name).toContain(`SUCCESS: ${count} rules found`);
    }
  });

  it('fails on a rule Prometheus would refuse', async () => {
    await expect(
      promtoolCheckRules([
        { name: 'broken', rules: [{ alert: 'Broken', expr: 'sum(rate(mds_http_requests_total[5m])' }] },
      ]),
    ).rejects.toThrow(/promtool refused the rules/);
  });
});

type Panel = {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: { expr: string; refId: string }[];
};

describe('the Grafana dashboard (deploy/grafana/messenger-delivery.json)', () => {
  const dashboard = JSON.parse(
    readFileSync(join(root, 'deploy', 'grafana', 'messenger-delivery.json'), 'utf8'),
  ) as {
    uid: string;
    title: string;
    templating: { list: { name: string }[] };
    panels: Panel[];
  };
  const panels = dashboard.panels.filter((p) => p.type !== 'row');
  const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

  it('parses, and every panel queries the data source variable, with unique ids', () => {
    expect(dashboard.uid).toBe('mds-overview');
    expect(panels.length).toBeGreaterThan(10);
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    for (const panel of panels) {
      expect(panel.datasource?.uid, panel.title).toBe('${datasource}');
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
    }
  });

  it('references only metrics that exist: those the code registers, and the defaults', async () => {
    const known = await defaultMetrics();
    const used = new Set<string>();
    for (const { panel, expr } of exprs) {
      const metrics = [...expr.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{/g)].map((m) => m[1]!);
      expect(metrics.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const metric of [
        ...metrics,
        ...[...expr.matchAll(/\b(?:mds|nodejs|process)_[a-z0-9_]+/g)].map((m) => m[0]),
      ]) {
        const base = metric.replace(/_(bucket|count|sum)$/, '');
        expect(inCode.has(base) || known.has(base) || known.has(metric), `${panel} uses ${metric}`).toBe(
          true,
        );
        used.add(base);
      }
    }
    // The dashboard covers each part of the pipeline.
    for (const metric of [
      'mds_gateway_accepted_total',
      'mds_events_published_total',
      'mds_sender_outcomes_total',
      'mds_webhook_attempts_total',
      'mds_heap_after_major_gc_bytes',
    ])
      expect(used).toContain(metric);
  });

  it("has queries Prometheus accepts (promtool, the dashboard's variables given values)", async () => {
    const variables = dashboard.templating.list.map((v) => v.name);
    const concrete = (expr: string) =>
      expr
        .replace(/\$__(rate_interval|interval|range)\b/g, '5m')
        .replace(/\$\{?(\w+)\}?/g, (whole, name: string) => (variables.includes(name) ? 'x' : whole));
    const rules = exprs.map(({ expr }, i) => ({ record: `dashboard:panel_${i}`, expr: concrete(expr) }));
    for (const rule of rules) expect(rule.expr, rule.record).not.toContain('$');
    expect(await promtoolCheckRules([{ name: 'dashboard', rules }])).toContain(
      `SUCCESS: ${rules.length} rules found`,
    );
  });
});
