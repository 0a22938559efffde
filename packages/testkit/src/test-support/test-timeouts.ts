// The rule that no test passes or fails by the machine's speed: every package's tests run under the shared
// vitest config, whose timeouts are floors a loaded machine meets (vitest.shared.ts), and no test file or
// config asks for less. Read from the source with TypeScript's parser, so a new test cannot slip under it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/** Every workspace folder of the repository (packages/*, services/*, test-e2e, deploy, docs). */
export function workspaceDirs(root: string): string[] {
  const nested = ['packages', 'services'].flatMap((area) =>
    existsSync(join(root, area)) ? readdirSync(join(root, area)).map((name) => join(root, area, name)) : [],
  );
  return [...nested, ...['test-e2e', 'deploy', 'docs'].map((name) => join(root, name))].filter((dir) =>
    existsSync(join(dir, 'package.json')),
  );
}

const skipped = new Set(['node_modules', 'dist', 'gen', 'test-artifacts']);

/** The test files of a workspace (what the shared config includes: src/ and test/, `*.test.ts`). */
export function testFiles(dir: string): string[] {
  const walk = (folder: string): string[] =>
    readdirSync(folder).flatMap((entry) => {
      if (skipped.has(entry)) return [];
      const path = join(folder, entry);
      if (statSync(path).isDirectory()) return walk(path);
      return entry.endsWith('.test.ts') ? [path] : [];
    });
  return ['src', 'test'].map((d) => join(dir, d)).flatMap((d) => (existsSync(d) ? walk(d) : []));
}

const TESTS = new Set(['it', 'test', 'describe', 'suite']);
const HOOKS = new Set(['beforeAll', 'afterAll', 'beforeEach', 'afterEach']);
/** Bounded waits inside a test: `expect.poll`, `vi.waitFor`, a browser page's `waitFor...`. */
const WAITS = /^(poll|waitFor|waitForSelector|waitForFunction|waitForURL|waitForResponse|waitForEvent)$/;

export interface TimeoutInSource {
  /** `file:line`, relative to the root. */
  where: string;
  kind: 'test' | 'hook' | 'wait';
  ms: number;
}

/** The vitest function a call is made of (`it`, `it.skipIf(x)`, `describe.each(t)`...), if it is one. */
function vitestFunction(callee: ts.Expression): { name: string } | undefined {
  let node: ts.Expression = callee;
  for (;;) {
    if (ts.isIdentifier(node)) {
      const name = node.text;
      return TESTS.has(name) || HOOKS.has(name) ? { name } : undefined;
    }
    if (ts.isPropertyAccessExpression(node)) node = node.expression;
    else if (ts.isCallExpression(node)) node = node.expression;
    else return undefined;
  }
}

function literalMs(node: ts.Node): number | undefined {
  return ts.isNumericLiteral(node) ? Number(node.text.replaceAll('_', '')) : undefined;
}

/**
 * Every timeout a test file gives a test, a suite or a hook as a number in the source: the number after the
 * function (`it(name, fn, 5_000)`, `beforeAll(fn, 120_000)`) or an options object's `timeout`; and every one a
 * bounded wait is given (`expect.poll(fn, { timeout })`, `page.waitForSelector(s, { timeout })`).
 */
export function timeoutsIn(file: string, root: string): TimeoutInSource[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: TimeoutInSource[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      if (WAITS.test(node.expression.name.text)) {
        for (const arg of node.arguments) {
          if (!ts.isObjectLiteralExpression(arg)) continue;
          for (const p of arg.properties) {
            if (!ts.isPropertyAssignment(p) || !ts.isIdentifier(p.name) || p.name.text !== 'timeout')
              continue;
            const ms = literalMs(p.initializer);
            if (ms === undefined) continue;
            const line = source.getLineAndCharacterOfPosition(p.initializer.getStart()).line + 1;
            found.push({ where: `${relative(root, file)}:${line}`, kind: 'wait', ms });
          }
        }
      }
    }
    if (ts.isCallExpression(node)) {
      const fn = vitestFunction(node.expression);
      if (fn) {
        const kind = HOOKS.has(fn.name) ? ('hook' as const) : ('test' as const);
        const candidates = node.arguments.flatMap((arg) => {
          if (ts.isObjectLiteralExpression(arg)) {
            return arg.properties
              .filter(ts.isPropertyAssignment)
              .filter((p) => ts.isIdentifier(p.name) && p.name.text === 'timeout')
              .map((p) => p.initializer);
          }
          return [];
        });
        const last = node.arguments.at(-1);
        if (last && node.arguments.length > 1) candidates.push(last);
        for (const candidate of candidates) {
          const ms = literalMs(candidate);
          if (ms === undefined) continue;
          const line = source.getLineAndCharacterOfPosition(candidate.getStart()).line + 1;
          found.push({ where: `${relative(root, file)}:${line}`, kind, ms });
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}
