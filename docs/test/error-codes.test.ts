import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import MarkdownIt from 'markdown-it';
import { describe, expect, it } from 'vitest';
import { messageErrorCodes, phoneChangeErrorCodes } from '@mds/contracts';
import { repositoryRoot } from '../src/configuration.js';

const api = readFileSync(join(repositoryRoot, 'docs', 'api.md'), 'utf8');

/** The first cell of every body row of the first table after the heading `title`. */
function firstColumn(markdown: string, title: string): string[] {
  const tokens = MarkdownIt().parse(markdown, {});
  const heading = tokens.findIndex((t, i) => t.type === 'inline' && t.content === title && i > 0);
  const body = tokens.findIndex((t, i) => i > heading && t.type === 'tbody_open');
  const cells: string[] = [];
  for (let i = body; tokens[i]!.type !== 'tbody_close'; i++)
    if (tokens[i]!.type === 'tr_open') cells.push(tokens[i + 2]!.content);
  return cells;
}

describe('the error code catalogue in docs/api.md', () => {
  it('lists exactly the error codes of failed messages that @mds/contracts defines', () => {
    const listed = firstColumn(api, 'Error codes of failed messages').map((c) => c.replace(/`/g, ''));
    expect(listed.sort()).toEqual(Object.keys(messageErrorCodes).sort());
  });

  it('names every code change_phone is refused with', () => {
    for (const code of Object.keys(phoneChangeErrorCodes)) expect(api).toContain(`\`${code}\``);
  });
});
