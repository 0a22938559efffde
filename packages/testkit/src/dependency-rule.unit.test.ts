import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repoRoot } from '@mds/local-infra';
import { dependencyViolations, specifiersOf } from './dependency-rule.js';

describe('packages sit below services, services beside each other, all below the end-to-end suite', () => {
  it('holds in this repository', () => {
    expect(dependencyViolations(repoRoot())).toEqual([]);
  });
});

describe('the check', () => {
  let root = '';
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  function tree(files: Record<string, string | object>): string {
    root = mkdtempSync(join(tmpdir(), 'dependency-rule-'));
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), typeof content === 'string' ? content : JSON.stringify(content));
    }
    return root;
  }

  const clean = {
    'packages/kit/package.json': { name: '@mds/kit', dependencies: { '@mds/base': '0.0.0' } },
    'packages/kit/src/index.ts': "import { x } from '@mds/base';\nexport const y = x;\n",
    'packages/base/package.json': { name: '@mds/base' },
    'services/api/package.json': { name: '@mds/api', dependencies: { '@mds/kit': '0.0.0' } },
    'services/api/src/main.ts': "import { y } from '@mds/kit';\n",
    'services/worker/package.json': { name: '@mds/worker', dependencies: { '@mds/kit': '0.0.0' } },
    'test-e2e/package.json': { name: '@mds/test-e2e', dependencies: { '@mds/api': '0.0.0' } },
  };

  it('finds nothing in a tree that keeps the rule', () => {
    expect(dependencyViolations(tree(clean))).toEqual([]);
  });

  it('finds a package that declares a service, in any dependency field', () => {
    const found = dependencyViolations(
      tree({
        ...clean,
        'packages/kit/package.json': { name: '@mds/kit', devDependencies: { '@mds/api': '0.0.0' } },
      }),
    );
    expect(found).toEqual(['@mds/kit: devDependencies has @mds/api (a package depends on a service)']);
  });

  it('finds a package importing a service, by name, subpath or relative path', () => {
    const found = dependencyViolations(
      tree({
        ...clean,
        'packages/kit/src/test-support/stack.ts':
          "import { start } from '@mds/api';\nimport { schema } from '@mds/api/config';\n" +
          "const app = await import('../../../../services/api/src/main.js');\n",
      }),
    );
    expect(found).toEqual([
      'packages/kit/src/test-support/stack.ts: imports @mds/api (a package depends on a service)',
      'packages/kit/src/test-support/stack.ts: imports @mds/api/config (a package depends on a service)',
      'packages/kit/src/test-support/stack.ts: imports ../../../../services/api/src/main.js (a package depends on a service)',
    ]);
  });

  it('finds a service that depends on or imports the end-to-end suite', () => {
    const found = dependencyViolations(
      tree({
        ...clean,
        'services/api/package.json': { name: '@mds/api', devDependencies: { '@mds/test-e2e': '0.0.0' } },
        'services/api/bench/load.bench.ts': "import { Stack } from '@mds/test-e2e';\n",
      }),
    );
    expect(found).toEqual([
      '@mds/api: devDependencies has @mds/test-e2e (a service depends on @mds/test-e2e)',
      'services/api/bench/load.bench.ts: imports @mds/test-e2e (a service depends on @mds/test-e2e)',
    ]);
  });

  it('finds a service that depends on or imports another service', () => {
    const found = dependencyViolations(
      tree({
        ...clean,
        'services/worker/package.json': { name: '@mds/worker', devDependencies: { '@mds/api': '0.0.0' } },
        'services/worker/test/support.ts':
          "import { start } from '@mds/api';\nimport { own } from '../src/app.js';\n" +
          "import { other } from '../../api/src/main.js';\n",
      }),
    );
    expect(found).toEqual([
      '@mds/worker: devDependencies has @mds/api (a service depends on another service)',
      'services/worker/test/support.ts: imports @mds/api (a service depends on another service)',
      'services/worker/test/support.ts: imports ../../api/src/main.js (a service depends on another service)',
    ]);
  });

  it('does not take a package whose name merely starts like a service for the service', () => {
    const found = dependencyViolations(
      tree({ ...clean, 'packages/kit/src/more.ts': "import { z } from '@mds/api-client';\n" }),
    );
    expect(found).toEqual([]);
  });

  it('reads every form of specifier', () => {
    expect(
      specifiersOf(
        "import a from 'a';\nimport 'b';\nexport { c } from \"c\";\nconst d = await import('d');\n" +
          "const e = require('e');\nimport type { F } from 'f';\n",
      ),
    ).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  });
});
