// The keys page in a real browser (Debian's Chromium, driven by playwright-core) against the stack as real
// processes, in English and Russian, at 1366 px and 390 px: a key named by its label in every dialog (revoke,
// roll, the key shown once), a roll with the overlap the owner chooses, "last used" and the key's request log
// from the requests it made, and a revocation the gateway enforces within seconds. Screenshots go to
// test-artifacts/dashboard-keys/, each page checked with axe-core (nothing serious or critical).
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, lookAt } from '@mds/testkit/browser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from './harness.js';
import { startDeliveryStack, type Sandbox } from './sandbox.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'dashboard-keys');
const PASSWORD = 'a long passphrase for the dashboard';
const LABEL = 'Checkout backend';

let stack: Stack;
let sandbox: Sandbox;
let browser: Browser;
const shared = { email: '', keyId: '', apiKey: '' };

beforeAll(async () => {
  ({ stack, sandbox } = await startDeliveryStack({ without: ['max-sender', 'telegram-sender'] }));
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await sandbox?.close();
  await stack?.stop();
});

const byTestId = (page: Page, id: string) => page.locator(`[data-testid="${id}"]`);

/** A screenshot per language, nothing past the page's edge, nothing serious for axe (see lookAt). */
const look = (page: Page, language: string, name: string) => lookAt(page, join(ARTIFACTS, language), name);

async function signIn(page: Page, email: string): Promise<void> {
  await page.goto(`${sandbox.dashboardUrl}/sign-in`);
  await byTestId(page, 'email').fill(email);
  await byTestId(page, 'password').fill(PASSWORD);
  await byTestId(page, 'sign-in').click();
  await byTestId(page, 'company-name').waitFor();
}

/** A request to the public API with a key: its status. */
async function gateway(
  apiKey: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<number> {
  const response = await fetch(`${sandbox.gatewayUrl}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe('the keys page', () => {
  it('makes a key, shows its requests and when it was last used, rolls it with an overlap and revokes by label (English)', async () => {
    const { company_id: companyId } = await sandbox.admin<{ company_id: string }>('POST', '/companies', {
      name: 'Keys & Co',
    });
    const email = `owner-${companyId.slice(0, 8)}@keys.test`;
    const link = await sandbox.member(companyId, email);
    shared.email = email;
    const ctx = await browser.newContext({ locale: 'en-US', viewport: { width: 1366, height: 900 } });
    const page = await ctx.newPage();
    await page.goto(link);
    await byTestId(page, 'name').fill('Ada Owner');
    await byTestId(page, 'new-password').fill(PASSWORD);
    await byTestId(page, 'repeat-password').fill(PASSWORD);
    await byTestId(page, 'save-password').click();
    await byTestId(page, 'company-name').waitFor();

    await page.goto(`${sandbox.dashboardUrl}/keys`);
    await byTestId(page, 'key-label').fill(LABEL);
    await byTestId(page, 'create-key').click();
    await expect.poll(() => byTestId(page, 'created-key').textContent()).toContain(`Key "${LABEL}" created`);
    const apiKey = (await byTestId(page, 'new-api-key').textContent())!.trim();
    const keyId = /^mds_([a-z0-9]{12})_/.exec(apiKey)![1]!;
    Object.assign(shared, { keyId, apiKey });
    await expect.poll(() => byTestId(page, `key-last-used-${keyId}`).textContent()).toContain('never');
    await look(page, 'en', '01-key-created');

    // Requests with the key: two reads of ids that are no message (404), a send and a batch that are not valid (422).
    const eventId = randomUUID();
    expect(await gateway(apiKey, 'GET', `/events/${eventId}`)).toBe(404);
    expect(await gateway(apiKey, 'GET', `/events/${randomUUID()}`)).toBe(404);
    expect(await gateway(apiKey, 'POST', '/send', { phone_number: 'nope' })).toBe(422);
    expect(await gateway(apiKey, 'POST', '/send/batch', { messages: [] })).toBe(422);

    await expect
      .poll(
        async () => {
          await page.reload();
          return byTestId(page, `key-last-used-${keyId}`).textContent();
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .not.toContain('never');
    await look(page, 'en', '02-last-used');

    await byTestId(page, `requests-${keyId}`).click();
    await page.getByRole('heading', { level: 1, name: `Requests made with “${LABEL}”` }).waitFor();
    await expect.poll(() => byTestId(page, 'request-row').count(), { timeout: 30_000 }).toBe(4);
    const rows = await byTestId(page, 'request-row').allTextContents();
    // Newest first: the batch and the send (422), then the two reads.
    expect(rows[0]).toMatch(/Send a batch.*422/);
    expect(rows[1]).toMatch(/Send a message.*422/);
    expect(rows[3]).toMatch(new RegExp(`Read a state.*404.*${eventId}`));
    await expect(page.getByText('kept 30 days', { exact: false }).count()).resolves.toBe(1);
    await look(page, 'en', '03-request-log');

    // Roll, keeping the old key for 24 hours: the dialog names the key by its label.
    await page.goto(`${sandbox.dashboardUrl}/keys`);
    await byTestId(page, `roll-${keyId}`).click();
    const rollDialog = page.getByRole('dialog');
    await expect(rollDialog.getByRole('heading').textContent()).resolves.toBe(`Roll “${LABEL}”`);
    await rollDialog.getByLabel('in 24 hours').check();
    await look(page, 'en', '04-roll-dialog');
    await byTestId(page, `roll-${keyId}-confirm`).click();
    await rollDialog.waitFor({ state: 'detached' });
    const shown = byTestId(page, 'created-key');
    await expect.poll(() => shown.textContent()).toContain(`New key for “${LABEL}”`);
    await expect(byTestId(page, 'old-key-end').textContent()).resolves.toMatch(
      new RegExp(`The old key mds_${keyId}_… keeps working until`),
    );
    const newKey = (await byTestId(page, 'new-api-key').textContent())!.trim();
    expect(newKey).not.toBe(apiKey);
    const newKeyId = /^mds_([a-z0-9]{12})_/.exec(newKey)![1]!;
    await byTestId(page, `key-expires-${keyId}`).waitFor();
    // Both work through the overlap.
    expect(await gateway(apiKey, 'GET', `/events/${randomUUID()}`)).toBe(404);
    expect(await gateway(newKey, 'GET', `/events/${randomUUID()}`)).toBe(404);
    await look(page, 'en', '05-rolled');

    // Revoke the new key: named by its label; the public API refuses it within seconds.
    await byTestId(page, `revoke-${newKeyId}`).click();
    const revokeDialog = page.getByRole('dialog');
    await expect(revokeDialog.getByRole('heading').textContent()).resolves.toBe(`Revoke “${LABEL}”?`);
    await expect(revokeDialog.textContent()).resolves.toContain('within a second');
    await look(page, 'en', '06-revoke-dialog');
    const revokedAt = Date.now();
    await byTestId(page, `revoke-${newKeyId}-confirm`).click();
    await revokeDialog.waitFor({ state: 'detached' });
    await expect
      .poll(() => gateway(newKey, 'GET', `/events/${randomUUID()}`), { timeout: 30_000, interval: 50 })
      .toBe(401);
    console.log(`dashboard revoke: the gateway refused the key ${Date.now() - revokedAt} ms after the click`);
    await expect.poll(() => byTestId(page, `key-${newKeyId}`).textContent()).toContain('revoked');
    await look(page, 'en', '07-revoked');

    // At 390 px the table scrolls in its box; nothing runs past the page's edge.
    await page.setViewportSize({ width: 390, height: 844 });
    await look(page, 'en', '08-keys-390');
    await page.goto(`${sandbox.dashboardUrl}/keys/${keyId}`);
    await byTestId(page, 'requests-table').waitFor();
    await look(page, 'en', '09-request-log-390');
    await ctx.close();
  }, 180_000);

  it('is the same in Russian: the roll and revoke dialogs and the request log', async () => {
    const ctx = await browser.newContext({ locale: 'ru-RU', viewport: { width: 1366, height: 900 } });
    const page = await ctx.newPage();
    await signIn(page, shared.email);
    await page.goto(`${sandbox.dashboardUrl}/keys`);
    await page.getByRole('heading', { level: 1, name: 'Ключи API' }).waitFor();
    await look(page, 'ru', '01-keys');
    await byTestId(page, `roll-${shared.keyId}`).click();
    const rollDialog = page.getByRole('dialog');
    await expect(rollDialog.getByRole('heading').textContent()).resolves.toBe(`Перевыпуск ключа «${LABEL}»`);
    await expect(rollDialog.textContent()).resolves.toContain('через 7 дней');
    await look(page, 'ru', '02-roll-dialog');
    await rollDialog.getByRole('button', { name: 'Отмена' }).click();
    await byTestId(page, `revoke-${shared.keyId}`).click();
    const revokeDialog = page.getByRole('dialog');
    await expect(revokeDialog.getByRole('heading').textContent()).resolves.toBe(`Отозвать ключ «${LABEL}»?`);
    await look(page, 'ru', '03-revoke-dialog');
    await revokeDialog.getByRole('button', { name: 'Отмена' }).click();
    await page.goto(`${sandbox.dashboardUrl}/keys/${shared.keyId}`);
    await page.getByRole('heading', { level: 1, name: `Запросы с ключом «${LABEL}»` }).waitFor();
    await expect(page.getByText('Чтение состояния').count()).resolves.toBeGreaterThan(0);
    await look(page, 'ru', '04-request-log');
    await page.setViewportSize({ width: 390, height: 844 });
    await look(page, 'ru', '05-request-log-390');
    await page.goto(`${sandbox.dashboardUrl}/keys`);
    await page.getByRole('heading', { level: 1, name: 'Ключи API' }).waitFor();
    await look(page, 'ru', '06-keys-390');
    // Another company's key, or none, is no key of this company's.
    await page.goto(`${sandbox.dashboardUrl}/keys/aaaaaaaaaaaa`);
    await page.getByText('В вашей компании нет такого ключа.').waitFor();
    await ctx.close();
  }, 120_000);
});
