import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '@mds/testkit/browser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type TestStack } from '../../test/support.js';

// The API reference at /api/v1/docs as a person reads it, in Debian's Chromium: Redoc renders the served document
// (operations, headers, nested types, enums, examples, code samples, webhooks), and the page asks nothing of any
// host but the gateway. Screenshots go to test-artifacts/docs/.

const ARTIFACTS = join(import.meta.dirname, '../../test-artifacts/docs');
let stack: TestStack;
let browser: Browser;
let page: Page;
const elsewhere: string[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  stack = await startStack();
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  const gateway = new URL(stack.gatewayUrl);
  await page.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'data:' || url.protocol === 'blob:' || url.host === gateway.host)
      return route.continue();
    elsewhere.push(url.href);
    return route.abort();
  });
  await page.goto(`${stack.gatewayUrl}/api/v1/docs`, { waitUntil: 'networkidle' });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });

const text = () => page.locator('main, body').first().innerText();
/** Opens a page of the reference from its navigation (a group, then an entry of it) and waits for `shows`. */
async function open(group: string, entry: string, shows: string) {
  const item = page.getByText(entry, { exact: true }).first();
  if (!(await item.isVisible())) await page.getByText(group, { exact: true }).first().click();
  await item.click();
  await expect
    .poll(async () => (await text()).includes(shows), { message: `${entry} shows ${shows}` })
    .toBe(true);
}

describe('/api/v1/docs in Chromium', () => {
  it('renders the overview with the error catalogues as tables, fetching nothing from elsewhere', async () => {
    await expect.poll(() => page.title()).toBe('Messenger Delivery Service API');
    const body = await text();
    expect(body).toContain('Messenger Delivery Service (1.0.0)');
    // Markdown rendered: the catalogue is a table, not raw backticks.
    expect(
      await page.locator('table td code', { hasText: 'CLIENT_NOT_LINKED_TO_BOT' }).count(),
    ).toBeGreaterThan(0);
    expect(body).not.toContain('`CLIENT_NOT_LINKED_TO_BOT`');
    await shot('overview');
    expect(elsewhere).toEqual([]);
  });

  it('shows the send operation: headers, one body per messenger with its limits, nested buttons, examples, code samples', async () => {
    await open('Messages', 'Send a message', 'SendRequest (telegram)');
    let body = await text();
    for (const header of ['Idempotency-Key', 'X-Request-Id']) expect(body).toContain(header);
    expect(body).toContain('SendRequest (telegram)');
    expect(body).toContain('SendRequest (max)');
    expect(body).toMatch(/<= 4096 characters/);
    expect(body).toContain('"telegram"');
    expect(body).toContain('^\\+?[0-9]{11}$');
    // The request example and the curl sample beside it.
    expect(body).toContain('Telegram, with a link button');
    expect(body).toContain('curl -s "$MDS_URL/api/v1/send"');
    // The nested button type opens in place.
    await page.getByText('Show 2 array properties').first().click();
    await expect.poll(async () => (await text()).includes('<= 2048 characters')).toBe(true);
    await shot('send');
    // MAX's limit on the other variant.
    await page.getByText('SendRequest (max)', { exact: true }).first().click();
    await expect.poll(async () => (await text()).includes('<= 4000 characters')).toBe(true);
    // The SDK's sample, and a problem response with its example.
    expect(await page.locator('pre, code', { hasText: 'await mds.send(' }).count()).toBeGreaterThan(0);
    await page.getByText('422', { exact: true }).first().click();
    body = await text();
    expect(body).toContain('invalid_phone_number');
    await shot('send-sdk-422');
  });

  it('shows the webhooks: the Standard Webhooks headers, each payload and its example', async () => {
    await open('Webhooks', 'The outcome of a message', '"type": "message.status"');
    const body = await text();
    for (const header of ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
      expect(body).toContain(header);
    expect(body).toContain('"type": "message.status"');
    await shot('webhook-message-status');
    await open('Webhooks', 'The answer to a client check', '"bot_name": "shop_bot"');
    await open('Webhooks', 'The outcome of a phone number change', '"links_moved": 2');
    expect(elsewhere).toEqual([]);
  });
});
