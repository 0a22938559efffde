import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { withSchema } from './schema-doc.js';

// Prettier aligns the tables' columns: compare the cells, not the padding.
const cells = (markdown: string) => markdown.replace(/[ \t]*\|[ \t]*/g, '|').replace(/\|-+(?=\|)/g, '|---');

it('docs/replay.md documents the schema the export writes (npm run docs:schema -w @mds/replay)', () => {
  const doc = readFileSync(new URL('../../../docs/replay.md', import.meta.url), 'utf8');
  expect(cells(doc)).toBe(cells(withSchema(doc)));
  expect(cells(doc)).toContain('|`phone_number`|varchar|**yes**|MessageAccepted.phone_number|');
});
