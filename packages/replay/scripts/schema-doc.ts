// npm run docs:schema: rewrites the schema tables of docs/replay.md from the code.
import { readFileSync, writeFileSync } from 'node:fs';
import { withSchema } from '../src/schema-doc.js';

const file = new URL('../../../docs/replay.md', import.meta.url);
writeFileSync(file, withSchema(readFileSync(file, 'utf8')));
