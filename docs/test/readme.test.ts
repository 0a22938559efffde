import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../src/configuration.js';

const readme = readFileSync(join(repositoryRoot, 'README.md'), 'utf8');

describe('the README', () => {
  it('is a five-minute read: under 250 lines', () => {
    expect(readme.split('\n').length).toBeLessThan(250);
  });

  it('gives the two commands, and CI runs the test command it gives', () => {
    expect(readme).toContain('| Run the whole stack locally | `npm install && npm start` |');
    expect(readme).toContain('| Run every test              | `npm install && npm test`  |');
    const ci = readFileSync(join(repositoryRoot, '.ci', 'run'), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'));
    expect(ci).toContain('npm install --no-audit --no-fund');
    expect(ci.at(-1)).toMatch(/^(MDS_[A-Z_]+=\S+ )*npm test$/);
  });
});
