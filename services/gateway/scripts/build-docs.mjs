// Build step after tsc: the OpenAPI document as a file (dist/openapi.json, what @mds/client is generated from) and
// the API reference page (dist/docs.html): Redoc, rendered by Redocly CLI with its scripts inlined, so the gateway
// serves one self-contained page and the reader's browser fetches nothing from elsewhere.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { openApiDocument } = await import(join(root, 'dist/api/openapi.js'));
const documentFile = join(root, 'dist/openapi.json');
const document = `${JSON.stringify(openApiDocument(), null, 2)}\n`;
writeFileSync(documentFile, document);
// `npm run openapi`: the copy @mds/client is generated from (its tests and the gateway's compare the two).
if (process.argv.includes('--client'))
  writeFileSync(join(root, '../../packages/client/openapi.json'), document);

const redocly = join(
  dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')),
  'bin/cli.js',
);
const built = spawnSync(
  process.execPath,
  [
    redocly,
    'build-docs',
    documentFile,
    '--inlineBundle',
    '--config',
    join(root, 'redocly.yaml'),
    '--title',
    'Messenger Delivery Service API',
    '--output',
    join(root, 'dist/docs.html'),
  ],
  {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  },
);
if (built.status !== 0) {
  process.stderr.write(built.stdout);
  throw new Error(`redocly build-docs failed (exit ${built.status})`);
}

// Redoc's attribution shows Redocly's logo from their CDN: the page draws it from a data: URL instead.
const logo = `data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" width="44" height="14"><text x="0" y="11" font-family="sans-serif" font-size="11" fill="#0044D4">Redoc</text></svg>',
)}`;
const page = join(root, 'dist/docs.html');
const html = readFileSync(page, 'utf8').replace(
  /https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg/g,
  logo,
);
if (html.includes('https://cdn.redoc.ly/'))
  throw new Error('the API reference page still names cdn.redoc.ly');
writeFileSync(page, html);
