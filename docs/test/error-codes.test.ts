import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import MarkdownIt from 'markdown-it';
import { describe, expect, it } from 'vitest';
import { messageErrorCatalogue, phoneChangeErrorCatalogue, type ErrorExplanation } from '@mds/contracts';
import { repositoryRoot } from '../src/configuration.js';

const api = readFileSync(join(repositoryRoot, 'docs', 'api.md'), 'utf8');

/** The cells of every body row of the first table after the heading `title`. */
function tableAfter(markdown: string, title: string): string[][] {
  const tokens = MarkdownIt().parse(markdown, {});
  const heading = tokens.findIndex((t, i) => t.type === 'inline' && t.content === title && i > 0);
  expect(heading, `a heading "${title}" in docs/api.md`).toBeGreaterThan(0);
  const body = tokens.findIndex((t, i) => i > heading && t.type === 'tbody_open');
  const rows: string[][] = [];
  for (let i = body; tokens[i]!.type !== 'tbody_close'; i++) {
    if (tokens[i]!.type === 'tr_open') rows.push([]);
    if (tokens[i]!.type === 'inline') rows.at(-1)!.push(tokens[i]!.content);
  }
  return rows;
}

/** The table the catalogue says it should be: code, what happened, what to do (in English). */
const expected = (catalogue: Record<string, Record<'en', ErrorExplanation>>) =>
  Object.entries(catalogue).map(([code, { en }]) => [`\`${code}\``, en.meaning, en.action]);

describe('the error code tables in docs/api.md', () => {
  it("are the catalogue's failed-message codes, word for word (packages/contracts/src/error-catalogue.ts)", () => {
    expect(tableAfter(api, 'Error codes of failed messages')).toEqual(expected(messageErrorCatalogue));
  });

  it("are the catalogue's phone-change codes, word for word", () => {
    expect(tableAfter(api, 'Error codes of refused phone changes')).toEqual(
      expected(phoneChangeErrorCatalogue),
    );
  });
});
