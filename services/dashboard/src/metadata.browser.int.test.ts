// A request's metadata in a real browser (Debian's Chromium, playwright-core), in English on a laptop (1366 px):
// the Send page takes key/value rows, sends them through the gateway, and the message's timeline shows them in
// the request it accepted. Screenshots go to test-artifacts/metadata/; axe-core finds nothing serious.
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { byTestId, launchChromium, lookAt, signIn, WAIT } from '../test/browser.js';
import { companyWithOwner, startDashboardStack, type DashboardStack } from '../test/support.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'metadata');

let stack: DashboardStack;
let browser: Browser;
beforeAll(async () => {
  stack = await startDashboardStack({ gateway: true, personKeys: true });
  browser = await launchChromium();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

it('sends metadata from the Send page and shows it on the timeline', async () => {
  const acme = await companyWithOwner(stack, 'Metadata');
  const page = await signIn(browser, stack.url, 'en', 1366, acme.email);
  await page.goto(`${stack.url}/send`);
  await byTestId(page, 'send-phone').fill('+7 912 345-67-89');
  await byTestId(page, 'send-text').fill('Your order has shipped');
  for (const [i, [key, value]] of [
    ['order_id', 'A-1042'],
    ['campaign.name', 'autumn sale'],
  ].entries()) {
    await byTestId(page, 'add-metadata').click();
    await byTestId(page, `metadata-key-${i}`).fill(key!);
    await byTestId(page, `metadata-value-${i}`).fill(value!);
  }
  await lookAt(page, ARTIFACTS, 'en-1366-01-send-metadata');
  await byTestId(page, 'send').click();
  const eventId = (await byTestId(page, 'sent-event-id').textContent({ timeout: WAIT }))!.trim();
  await byTestId(page, 'follow').click();
  await page.waitForURL(`**/messages/${eventId}`, { timeout: WAIT });
  const body = byTestId(page, 'request-body');
  await body.waitFor({ timeout: WAIT });
  expect(JSON.parse((await body.textContent())!)).toMatchObject({
    text: 'Your order has shipped',
    metadata: { order_id: 'A-1042', 'campaign.name': 'autumn sale' },
  });
  await lookAt(page, ARTIFACTS, 'en-1366-02-timeline-metadata');
  await page.context().close();
}, 120_000);
