import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, brokenLinks, linksOf, manualFiles } from '../src/links.js';
import { repositoryRoot } from '../src/configuration.js';

/** Documents beside the checkout that the manual may link to (the project's shared brief and spec). */
const OUTSIDE = ['../shared'];

describe('links of the manual', () => {
  it('every relative link and anchor in README, CONTRIBUTING, docs/ and the READMEs resolves', () => {
    const files = manualFiles(repositoryRoot);
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/configuration.md', 'deploy/README.md']));
    expect(brokenLinks(repositoryRoot, files, OUTSIDE)).toEqual([]);
  });
});

describe('the link check', () => {
  const root = mkdtempSync(join(tmpdir(), 'mds-links-'));
  mkdirSync(join(root, 'docs'));
  writeFileSync(
    join(root, 'docs', 'guide.md'),
    '# Guide\n\n## Read API: `GET /api/v1/events/{event_id}`\n\n## Twice\n\n## Twice\n',
  );
  writeFileSync(
    join(root, 'README.md'),
    [
      '# Top',
      '',
      '[ok](docs/guide.md) [anchor](docs/guide.md#read-api-get-apiv1eventsevent_id) [second](docs/guide.md#twice-1)',
      '',
      '[self](#top) [folder](docs) [web](https://example.com/x#y) [spec](../shared/spec.md)',
      '',
      '[missing](docs/nothing.md) [bad anchor](docs/guide.md#nowhere) [bad self](#bottom)',
      '',
      '[escape](../elsewhere/file.md) ![img](docs/missing.png)',
      '',
      '```',
      '[in a code block](not/a/link.md)',
      '```',
      '`[inline code](nor/this.md)`',
    ].join('\n'),
  );

  it('finds GitHub’s anchors, duplicates numbered', () => {
    expect([...anchorsOf('# A b\n\n## A b\n\n### `x` y: {z}\n')]).toEqual(['a-b', 'a-b-1', 'x-y-z']);
  });

  it('reads links from the Markdown, never from code', () => {
    const hrefs = linksOf('a [x](y.md)\n\n```\n[no](z.md)\n```\n\n`[no](w.md)`\n').map((l) => l.href);
    expect(hrefs).toEqual(['y.md']);
  });

  it('reports missing files, missing anchors, links leaving the repository and missing images', () => {
    expect(brokenLinks(root, ['README.md'], OUTSIDE)).toEqual([
      {
        file: 'README.md',
        line: 7,
        href: 'docs/nothing.md',
        problem: 'no such file or folder: docs/nothing.md',
      },
      {
        file: 'README.md',
        line: 7,
        href: 'docs/guide.md#nowhere',
        problem: 'no heading #nowhere in docs/guide.md',
      },
      { file: 'README.md', line: 7, href: '#bottom', problem: 'no heading #bottom in README.md' },
      {
        file: 'README.md',
        line: 9,
        href: '../elsewhere/file.md',
        problem: 'leaves the repository (../elsewhere/file.md)',
      },
      {
        file: 'README.md',
        line: 9,
        href: 'docs/missing.png',
        problem: 'no such file or folder: docs/missing.png',
      },
    ]);
  });
});
