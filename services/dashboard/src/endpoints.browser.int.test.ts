// The webhook endpoints page in a real browser (Debian's Chromium, driven by playwright-core), in English and
// Russian, on a phone (390 px) and a laptop (1366 px): an endpoint added with its event types ticked, a test
// event answered, the notice of an endpoint turned off automatically, its attempts on the deliveries page.
// Screenshots go to test-artifacts/endpoints/; axe-core finds no serious accessibility violation.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EndpointList } from './domain/views.js';
import { byTestId, launchChromium, look as lookAt, signedIn as signIn, WAIT } from '../test/browser.js';
import {
  bot,
  companyWithOwner,
  eventually,
  member,
  messageStory,
  publishStory,
  startDashboardStack,
  type Browser as ApiBrowser,
  type DashboardStack,
} from '../test/support.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'endpoints');

let stack: DashboardStack;
let browser: Browser;
let receiver: Server;
let receiverUrl = '';

beforeAll(async () => {
  stack = await startDashboardStack({ dispatcher: 'registry-topics' });
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end('thanks'));
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  await stack?.stop();
});

const signedIn = (language: 'en' | 'ru', width: number, email: string) =>
  signIn(browser, stack.url, { language, width, email });
const look = (page: Page, name: string) => lookAt(page, ARTIFACTS, name);

/** Waits for a dialog to have faded in: axe measures colours as they are on the screen. */
async function fadedIn(page: Page): Promise<void> {
  await expect
    .poll(() => page.evaluate(`getComputedStyle(document.querySelector('[role="dialog"]')).opacity`), {
      timeout: WAIT,
    })
    .toBe('1');
}

async function endpointsOf(owner: ApiBrowser) {
  return (await owner.call<EndpointList>('GET', '/webhook/endpoints')).body.endpoints;
}

const TEXT = {
  en: { succeeded: 'succeeded', notice: 'turned off automatically', allTypes: 'every type' },
  ru: { succeeded: 'успешно', notice: 'выключен автоматически', allTypes: 'все типы' },
};

describe('the webhook endpoints page', () => {
  for (const language of ['en', 'ru'] as const) {
    it(`adds an endpoint with its event types, tests it, and shows an automatic disabling with what to do (${language})`, async () => {
      const { owner, companyId, email } = await companyWithOwner(stack, `Endpoints ${language}`);
      const page = await signedIn(language, 1366, email);
      await page.goto(`${stack.url}/webhook`);
      await byTestId(page, 'no-endpoints').waitFor({ timeout: WAIT });
      await look(page, `${language}-1366-01-empty`);

      // Added through the form: two of the types ticked, a description and a rate limit.
      await byTestId(page, 'add-endpoint').click();
      await byTestId(page, 'endpoint-url').fill(`${receiverUrl}/orders`);
      await byTestId(page, 'endpoint-description').fill(
        language === 'en' ? 'Orders service' : 'Сервис заказов',
      );
      await byTestId(page, 'event-type-message.status').check();
      await byTestId(page, 'event-type-client.check').check();
      await byTestId(page, 'endpoint-rate-limit').fill('25');
      await look(page, `${language}-1366-02-add-form`);
      await byTestId(page, 'save-endpoint').click();
      const secret = (await byTestId(page, 'new-endpoint-secret').textContent({ timeout: WAIT }))!.trim();
      expect(secret).toMatch(/^whsec_/);
      const [orders] = await endpointsOf(owner);
      expect(orders).toMatchObject({
        url: `${receiverUrl}/orders`,
        event_types: ['message.status', 'client.check'],
        rate_limit_per_second: 25,
      });

      // A test event to it, answered as the dispatcher answers.
      const card = byTestId(page, `endpoint-${orders!.id}`);
      await card.locator('[data-testid="send-test-event"]').click();
      await expect
        .poll(() => card.locator('[data-testid="test-outcome"]').textContent(), { timeout: WAIT })
        .toBe(TEXT[language].succeeded);
      await look(page, `${language}-1366-03-tested`);

      // A second endpoint, for every type, fails; the dispatcher turns it off.
      const { body: analytics } = await owner.call<{ endpoint: { id: string } }>(
        'POST',
        '/webhook/endpoints',
        {
          url: `https://analytics.example/mds?token=${'t'.repeat(40)}`,
        },
      );
      const { botId } = await bot(stack, companyId);
      await publishStory(
        stack.publisher,
        messageStory({
          companyId,
          botId,
          endpointId: analytics.endpoint.id,
          webhook: ['retryable', 'retryable'],
        }),
      );
      await publishStory(
        stack.publisher,
        messageStory({ companyId, botId, endpointId: orders!.id, webhook: ['succeeded'] }),
      );
      await stack.disableAutomatically(companyId, analytics.endpoint.id, 'HTTP 503 for 5 days');
      await eventually('the attempts folded', async () =>
        (await endpointsOf(owner)).every((e) => e.health.attempts_24h > 0),
      );
      await page.reload();
      const notice = byTestId(page, 'disabled-notice');
      await notice.waitFor({ timeout: WAIT });
      expect(await notice.textContent()).toContain(TEXT[language].notice);
      expect(await notice.textContent()).toContain('HTTP 503 for 5 days');
      const failing = byTestId(page, `endpoint-${analytics.endpoint.id}`);
      expect(await failing.locator('[data-testid="disabled-automatically"]').count()).toBe(1);
      expect(await failing.locator('[data-testid="endpoint-types"]').textContent()).toBe(
        TEXT[language].allTypes,
      );
      expect(await failing.locator('[data-testid="success-rate"]').textContent()).toMatch(/^0\s?%$/);
      expect(await card.locator('[data-testid="success-rate"]').textContent()).toMatch(/^100\s?%$/);
      await look(page, `${language}-1366-04-disabled-notice`);

      // Turning one off asks first, naming it.
      await card.locator('[data-testid="disable-endpoint"]').click();
      const dialog = page.getByRole('dialog');
      await fadedIn(page);
      expect(await dialog.textContent()).toContain(language === 'en' ? 'Orders service' : 'Сервис заказов');
      await look(page, `${language}-1366-05-confirm`);
      await page.keyboard.press('Escape');

      // Its attempts: the deliveries page, filtered to it.
      await failing.locator('[data-testid="endpoint-attempts"]').click();
      await page.waitForURL(/\/deliveries\?endpoint=ep_/);
      await byTestId(page, 'delivery-status')
        .getByText(language === 'en' ? 'pending' : 'в очереди')
        .click();
      await expect
        .poll(() => byTestId(page, 'delivery-endpoint-name').allTextContents(), { timeout: WAIT })
        .toEqual([expect.stringContaining('analytics.example')]);
      await look(page, `${language}-1366-06-attempts`);

      // The phone: the same pages, nothing past the edge.
      const phone = await signedIn(language, 390, email);
      await phone.goto(`${stack.url}/webhook`);
      await byTestId(phone, 'disabled-notice').waitFor({ timeout: WAIT });
      await look(phone, `${language}-390-01-endpoints`);
      await byTestId(phone, `endpoint-${orders!.id}`).locator('[data-testid="edit-endpoint"]').click();
      await byTestId(phone, 'endpoint-form').waitFor();
      await fadedIn(phone);
      await look(phone, `${language}-390-02-edit-form`);
      await phone.keyboard.press('Escape');
      await phone.goto(`${stack.url}/deliveries?endpoint=${orders!.id}`);
      await byTestId(phone, 'delivery-status').waitFor();
      await look(phone, `${language}-390-03-attempts`);

      // A viewer reads the page: no action, and the URL without its query (it may hold the receiver's token).
      const { email: viewerEmail } = await member(stack, owner, 'viewer');
      const viewer = await signedIn(language, 1366, viewerEmail);
      await viewer.goto(`${stack.url}/webhook`);
      await byTestId(viewer, `endpoint-${analytics.endpoint.id}`).waitFor({ timeout: WAIT });
      expect(await byTestId(viewer, 'add-endpoint').count()).toBe(0);
      expect(await byTestId(viewer, 'send-test-event').count()).toBe(0);
      expect(await viewer.locator('main').textContent()).not.toContain('tttttttttt');
      await look(viewer, `${language}-1366-07-viewer`);
      for (const p of [page, phone, viewer]) await p.context().close();
    });
  }
});
