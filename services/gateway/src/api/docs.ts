import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The API reference page: Redoc's rendering of the OpenAPI document, built into `dist/docs.html` by
 * `scripts/build-docs.mjs` at build time (one self-contained file: nothing is fetched from elsewhere).
 */
export function docsPage(): string {
  // From src/api (tests run the sources) or dist/api (the built service), the page is in the package's dist.
  const file = fileURLToPath(new URL('../../dist/docs.html', import.meta.url));
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '<!doctype html><title>API reference</title><p>The API reference is built by <code>npm run build</code>; the document is at <a href="openapi.json">openapi.json</a>.</p>';
  }
}
