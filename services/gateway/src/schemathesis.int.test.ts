import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeApiPhone } from '@mds/contracts/phone';
import { ensureSchemathesis } from '../scripts/schemathesis.mjs';
import { companyWithKey, startStack, type TestStack } from '../test/support.js';

// schemathesis, the property-based API tester, against a running gateway (client-registry, Kafka and PostgreSQL
// real) with the document the gateway serves: every operation, positive and negative data, every check it has.
// What the document says must be what the gateway does: no schema-valid request refused, no status, header or
// body the document does not describe. Loopback only; bounded examples, so the run stays near a minute.

const MAX_EXAMPLES = '80';
const SEED = '19';
let stack: TestStack;
let apiKey: string;
const work = mkdtempSync(join(tmpdir(), 'mds-schemathesis-'));

/** Numbers the gateway accepts (`format: phone`), drawn at random and kept when libphonenumber says valid. */
function validPhones(count: number): string[] {
  const found = new Set<string>();
  // Country codes of one, two and three digits, so the pattern's whole shape is exercised.
  const prefixes = ['1', '7', '31', '33', '44', '49', '55', '86', '375', '380', '998'];
  for (let i = 0; found.size < count && i < 200_000; i++) {
    const prefix = prefixes[i % prefixes.length]!;
    let digits = prefix;
    while (digits.length < 11) digits += String(Math.floor(Math.random() * 10));
    const checked = normalizeApiPhone(digits);
    if (checked.ok) found.add(checked.phone);
  }
  return [...found];
}

beforeAll(async () => {
  // Limits well above what the run sends: a 429 is documented, but it would hide what a request meant.
  stack = await startStack({
    RATE_LIMIT_SEND_PER_KEY: '10000',
    RATE_LIMIT_SEND_PER_COMPANY: '10000',
    RATE_LIMIT_OTHER_PER_KEY: '10000',
    RATE_LIMIT_OTHER_PER_COMPANY: '10000',
    RATE_LIMIT_READ_PER_KEY: '10000',
    RATE_LIMIT_READ_PER_COMPANY: '10000',
    AUTH_FAILURE_BURST: '100000',
  });
  ({ apiKey } = await companyWithKey(stack));
  writeFileSync(join(work, 'phones.json'), JSON.stringify(validPhones(300)));
}, 180_000);
afterAll(async () => {
  await stack?.stop();
  rmSync(work, { recursive: true, force: true });
});

function schemathesis(args: string[]): Promise<{ code: number | null; output: string }> {
  const bin = ensureSchemathesis();
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      cwd: work,
      env: {
        ...process.env,
        PYTHONPATH: fileURLToPath(new URL('../test/schemathesis', import.meta.url)),
        SCHEMATHESIS_HOOKS: 'mds_hooks',
        MDS_VALID_PHONES: join(work, 'phones.json'),
        MDS_API_KEY: apiKey,
        NO_COLOR: '1',
        COLUMNS: '160',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('schemathesis against the running gateway', () => {
  it('finds no request the document allows that the gateway refuses, and nothing the gateway answers that the document does not say', async () => {
    const report = join(work, 'junit.xml');
    const { code, output } = await schemathesis([
      '--config-file',
      fileURLToPath(new URL('../test/schemathesis/schemathesis.toml', import.meta.url)),
      'run',
      `${stack.gatewayUrl}/api/v1/openapi.json`,
      '--url',
      stack.gatewayUrl,
      '--checks',
      'all',
      '--mode',
      'all',
      '--phases',
      'examples,coverage,fuzzing,stateful',
      '--max-examples',
      MAX_EXAMPLES,
      '--seed',
      SEED,
      '--workers',
      '2',
      '--request-timeout',
      '10',
      '--report',
      'junit',
      '--report-junit-path',
      report,
    ]);
    // The whole report when anything failed: which check, which request, what came back.
    expect(code, output).toBe(0);
    const junit = readFileSync(report, 'utf8');
    // Every operation of the document was exercised (webhooks are not requests to the gateway), and the
    // sequences its links describe (a 202's event_id read back).
    const cases = [...junit.matchAll(/<testcase name="([^"]+)"/g)].map((m) => m[1]);
    expect(cases.sort()).toEqual([
      'GET /api/v1/events/{event_id}',
      'POST /api/v1/cancel',
      'POST /api/v1/change_phone',
      'POST /api/v1/client/check',
      'POST /api/v1/send',
      'POST /api/v1/send/batch',
      'Stateful tests',
    ]);
    expect(junit).not.toMatch(/<failure|<error/);
    const generated = /(\d+) generated/.exec(output);
    expect(Number(generated?.[1])).toBeGreaterThan(200);
  }, 300_000);
});
