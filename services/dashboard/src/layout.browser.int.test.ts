// Every page of the dashboard in a real browser (Debian's Chromium, driven by playwright-core), signed in and
// with data, in English and Russian, on a phone (390 px) and a laptop (1366 px): nothing wider than the screen
// (scrollWidth <= clientWidth), no text past its box or cut short, filters behind one control on the phone, and
// axe-core finds nothing serious. Then the webhook deliveries page as Svix shows deliveries: every status at
// first, tabs with counts, search by type and event id, what each delivery is about, each endpoint's health.
// Screenshots go to test-artifacts/layout/.
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bot,
  eventually,
  member,
  messageStory,
  PASSWORD,
  publishStory,
  startDashboardStack,
  Browser as ApiBrowser,
  tokenOf,
  type DashboardStack,
} from '../test/support.js';
import { launchChromium, settled } from '../test/browser.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'layout');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WAIT = 30_000;
const LANGUAGES = ['en', 'ru'] as const;
type Language = (typeof LANGUAGES)[number];
const WIDTHS = [390, 1366] as const;

let stack: DashboardStack;
let browser: Browser;
/** One company with something on every page: a bot, a key, an endpoint, messages and their deliveries. */
const world = {
  email: '',
  owner: undefined as unknown as ApiBrowser,
  endpointId: '',
  sent: '',
  failed: '',
  inviteLink: '',
};
const PHONE_SENT = '79161234567';
const PHONE_FAILED = '79169876543';

beforeAll(async () => {
  stack = await startDashboardStack({ dispatcher: 'registry-topics' });
  browser = await launchChromium();
  // Long names, as real companies have them: they must wrap, not run past the edge.
  const { body: company } = await stack.admin<{ company_id: string }>('POST', '/companies', {
    name: 'Северный магазин бытовой техники и электроники',
  });
  const companyId = company.company_id;
  const email = `owner-${companyId.slice(0, 8)}@north.test`;
  const invitedOwner = await stack.operator<{ link: string }>('POST', `/companies/${companyId}/members`, {
    email,
  });
  const owner = new ApiBrowser(stack.url);
  expect(
    (
      await owner.call('POST', '/links/redeem', {
        token: tokenOf(invitedOwner.body.link),
        password: PASSWORD,
      })
    ).status,
  ).toBe(200);
  Object.assign(world, { owner, email });
  const { botId } = await bot(stack, companyId);
  expect((await owner.call('POST', '/keys', { label: 'Интернет-магазин (боевой сервер)' })).status).toBe(201);
  const added = await owner.call<{ endpoint: { id: string } }>('POST', '/webhook/endpoints', {
    url: 'https://orders.example.com/integrations/messenger-delivery/webhooks',
    description: 'Сервис заказов (боевой)',
  });
  expect(added.status).toBe(201);
  world.endpointId = added.body.endpoint.id;
  const sent = messageStory({
    companyId,
    botId,
    phone: PHONE_SENT,
    endpointId: world.endpointId,
    webhook: ['succeeded'],
  });
  const failed = messageStory({
    companyId,
    botId,
    phone: PHONE_FAILED,
    endpointId: world.endpointId,
    outcome: { sent: false, errorCode: 'CLIENT_NOT_FOUND' },
    webhook: ['retryable'],
  });
  await publishStory(stack.publisher, sent);
  await publishStory(stack.publisher, failed);
  Object.assign(world, { sent: sent.id, failed: failed.id });
  await member(stack, owner, 'viewer');
  // A one-time link left unused: the set-password page is walked too.
  const invited = await owner.call<{ link: string }>('POST', '/members', {
    email: `developer-${companyId.slice(0, 8)}@example.test`,
    role: 'developer',
  });
  world.inviteLink = `${stack.url}/set-password#${tokenOf(invited.body.link)}`;
  await eventually(
    'the messages and their deliveries folded',
    async () =>
      (await owner.call<{ messages: unknown[] }>('GET', '/messages')).body.messages.length === 2 &&
      (await owner.call<{ deliveries: unknown[] }>('GET', '/deliveries')).body.deliveries.length === 2,
    WAIT,
  );
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const byTestId = (page: Page, id: string) => page.locator(`[data-testid="${id}"]`);

async function newPage(language: Language, width: number): Promise<Page> {
  const context = await browser.newContext({
    locale: language === 'en' ? 'en-US' : 'ru-RU',
    viewport: { width, height: 900 },
    timezoneId: 'Europe/Moscow',
  });
  return context.newPage();
}

async function signIn(page: Page): Promise<void> {
  await page.goto(`${stack.url}/sign-in`);
  await byTestId(page, 'email').fill(world.email);
  await byTestId(page, 'password').fill(PASSWORD);
  await byTestId(page, 'sign-in').click();
  // Attached, not visible: on a phone the company's name is in the menu.
  await byTestId(page, 'company-name').waitFor({ state: 'attached', timeout: WAIT });
}

interface Overflow {
  text: string;
  tag: string;
  why: string;
}

/**
 * Every element with text of its own that is shown: its text wider than its box (run past it, or cut short
 * with an ellipsis), or the element past the right edge of the screen outside a box that scrolls sideways.
 * Evaluated in the page (a string: this package has no DOM types).
 */
const OVERFLOWS = `(() => {
  const width = document.documentElement.clientWidth;
  const scrollsSideways = (el) => {
    for (let a = el.parentElement; a; a = a.parentElement) {
      const x = getComputedStyle(a).overflowX;
      if ((x === 'auto' || x === 'scroll') && a.scrollWidth > a.clientWidth) return true;
    }
    return false;
  };
  const hidden = (el) => {
    for (let a = el; a; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.display === 'none' || s.visibility === 'hidden' || Number(s.opacity) === 0) return true;
      const r = a.getBoundingClientRect();
      if (s.overflow !== 'visible' && (r.height < 2 || r.width < 2)) return true;
    }
    return false;
  };
  const found = [];
  for (const el of document.body.querySelectorAll('*')) {
    if (el instanceof SVGElement) continue;
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== '');
    if (!own || hidden(el)) continue;
    const style = getComputedStyle(el);
    const rect = el.getBoundingClientRect();
    const text = el.textContent.trim().slice(0, 60);
    const sideways = style.overflowX === 'auto' || style.overflowX === 'scroll';
    const clipsY = style.overflowY !== 'visible' && style.overflowY !== 'auto' && style.overflowY !== 'scroll';
    if (style.display !== 'inline' && !sideways && el.scrollWidth > el.clientWidth + 1)
      found.push({ text, tag: el.tagName.toLowerCase() + '.' + el.className, why: 'text wider than its box (' + el.scrollWidth + ' > ' + el.clientWidth + ')' });
    else if (style.display !== 'inline' && clipsY && el.scrollHeight > el.clientHeight + 1)
      found.push({ text, tag: el.tagName.toLowerCase() + '.' + el.className, why: 'text cut at the bottom of its box (' + el.scrollHeight + ' > ' + el.clientHeight + ')' });
    else if (el.classList.contains('mantine-Badge-label') && rect.height > parseFloat(style.fontSize) * 2)
      found.push({ text, tag: el.tagName.toLowerCase() + '.' + el.className, why: 'a badge broken over lines' });
    else if (rect.right > width + 1 && !scrollsSideways(el))
      found.push({ text, tag: el.tagName.toLowerCase() + '.' + el.className, why: 'past the right edge (' + Math.round(rect.right) + ' > ' + width + ')' });
  }
  // A chosen value (a select's) or a date shown in a field, cut by the field's edge.
  for (const input of document.body.querySelectorAll('input:not([type=hidden]):not([type=checkbox]):not([type=radio])')) {
    if (!input.value || hidden(input)) continue;
    if (input.scrollWidth > input.clientWidth + 1)
      found.push({ text: input.value.slice(0, 60), tag: 'input.' + input.className, why: 'value wider than its field (' + input.scrollWidth + ' > ' + input.clientWidth + ')' });
  }
  return found;
})()`;

/**
 * A full-page screenshot; the page no wider than the screen; no text past its box or cut short; no serious
 * accessibility violation.
 */
async function look(page: Page, name: string): Promise<void> {
  await settled(page);
  // From the top: the page's fixed header would otherwise be drawn across the middle of the full page.
  await page.evaluate('window.scrollTo(0, 0)');
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const [scrollWidth, clientWidth] = await page.evaluate<[number, number]>(
    `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`,
  );
  expect({ page: name, scrollWidth, fits: scrollWidth <= clientWidth }).toEqual({
    page: name,
    scrollWidth,
    fits: true,
  });
  expect({ page: name, overflows: await page.evaluate<Overflow[]>(OVERFLOWS) }).toEqual({
    page: name,
    overflows: [],
  });
  await page.evaluate(AXE);
  const serious = await page.evaluate<{ id: string; targets: string[] }[]>(`axe.run(document, {
      resultTypes: ['violations'] }).then((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))`);
  expect({ page: name, serious }).toEqual({ page: name, serious: [] });
}

/**
 * Waits for a page's heading: the page has drawn (the timeline's heading is the message's own). Twice the usual
 * wait: a message's page draws once its first read answers, which took over 30 s once in a loaded CI run.
 */
const heading = (page: Page) =>
  page
    .getByRole('heading', { level: 1 })
    .first()
    .waitFor({ timeout: 2 * WAIT });

const TEXT = {
  en: { wrong: 'Wrong email or password', show: 'Show the password', title: 'Messenger delivery' },
  ru: { wrong: 'Неверная почта или пароль', show: 'Показать пароль', title: 'в мессенджеры' },
};

describe('every page fits the screen', () => {
  for (const language of LANGUAGES)
    for (const width of WIDTHS)
      it(`in ${language} at ${width} px: every page, nothing past an edge, filters behind one control on a phone`, async () => {
        const page = await newPage(language, width);
        const name = (n: string) => `${language}-${width}-${n}`;

        // Signing in: the tab's title and the password's show button in the language; a refusal said once.
        await page.goto(`${stack.url}/set-password`);
        await heading(page);
        await look(page, name('00-set-password-no-link'));
        // A new document: the page reads its link's token when it loads.
        await page.goto('about:blank');
        await page.goto(world.inviteLink);
        await byTestId(page, 'new-password').waitFor({ timeout: WAIT });
        await look(page, name('00-set-password'));
        await page.goto(`${stack.url}/sign-in`);
        await heading(page);
        expect(await page.title()).toContain(TEXT[language].title);
        await page.getByRole('button', { name: TEXT[language].show }).first().waitFor();
        await byTestId(page, 'email').fill('nobody@example.test');
        await byTestId(page, 'password').fill('not the password at all');
        await byTestId(page, 'sign-in').click();
        const problem = byTestId(page, 'problem');
        await problem.waitFor({ timeout: WAIT });
        expect((await problem.textContent())!.trim()).toBe(TEXT[language].wrong);
        await look(page, name('01-sign-in-refused'));

        await signIn(page);
        // Every section of the navigation (a section added later is walked too), then the pages outside it.
        const sections = await page
          .getByRole('navigation')
          .getByRole('link')
          .evaluateAll((links) => links.map((a) => (a as unknown as { pathname: string }).pathname));
        expect(sections.length).toBeGreaterThanOrEqual(9);
        const paths: [string, string][] = [
          ...sections.map((path): [string, string] => [path, path.replace(/^\//, '') || 'overview']),
          [`/messages/${world.sent}`, 'message-sent'],
          [`/messages/${world.failed}`, 'message-failed'],
          ['/deliveries?status=pending', 'deliveries-pending'],
          ['/no-such-page', 'not-found'],
        ];
        for (const [i, [path, slug]] of paths.entries()) {
          await page.goto(`${stack.url}${path}`);
          await heading(page);
          const title = await page.title();
          expect(title).toContain(TEXT[language].title);
          if (language === 'ru') expect(title).not.toMatch(/messenger|dashboard/i);
          await look(page, name(`${String(i + 2).padStart(2, '0')}-${slug}`));
          // Filters on a phone: one control, the first results on the first screen; opened, they fit too.
          const toggle = byTestId(page, 'filters-toggle');
          if (width === 390 && (path === '/messages' || path === '/deliveries')) {
            expect(await toggle.count()).toBe(1);
            const results = byTestId(page, path === '/messages' ? 'messages-table' : 'deliveries-table');
            expect((await results.boundingBox())!.y).toBeLessThan(900 - 100);
            await toggle.click();
            await page.locator('#filter-panel form').waitFor();
            await look(page, name(`${String(i + 2).padStart(2, '0')}-${slug}-filters-open`));
          }
          if (width === 1366) expect(await toggle.count()).toBe(0);
        }
        // The menu on a phone: sections and the language switch, nothing past the edge.
        if (width === 390) {
          await page.goto(`${stack.url}/`);
          await heading(page);
          await page.getByRole('button', { name: language === 'en' ? 'Menu' : 'Меню' }).click();
          await byTestId(page, 'language-menu').waitFor();
          await look(page, name('20-menu'));
        }
        await page.context().close();
      }, 240_000);
});

const DELIVERIES = {
  en: {
    tabs: ['All', 'Failed', 'Pending', 'Delivered'],
    about: `Message to +${PHONE_SENT}`,
    kind: 'Message status',
    invalid: 'An event id looks like',
    phoneChange: 'Phone change',
  },
  ru: {
    tabs: ['Все', 'Неудачные', 'В очереди', 'Доставленные'],
    about: `Сообщение на +${PHONE_SENT}`,
    kind: 'Статус сообщения',
    invalid: 'Идентификатор события выглядит так',
    phoneChange: 'Смена номера',
  },
};

describe('the webhook deliveries page', () => {
  it('answers every status at first, counts per status under the same filters, and refuses bad filters', async () => {
    const { owner } = world;
    const all = await owner.call<{ deliveries: { subject_id: string; subject: unknown }[] }>(
      'GET',
      '/deliveries',
    );
    expect(all.body.deliveries.map((d) => d.subject_id).sort()).toEqual([world.sent, world.failed].sort());
    expect(all.body.deliveries.find((d) => d.subject_id === world.sent)!.subject).toEqual({
      phone: PHONE_SENT,
      state: 'sent',
    });
    const counts = await owner.call('GET', '/deliveries/counts');
    expect(counts.body).toEqual({
      counts: {
        pending: { count: 1, capped: false },
        failed: { count: 0, capped: false },
        delivered: { count: 1, capped: false },
      },
      cap: 10_000,
    });
    const ofSent = await owner.call('GET', `/deliveries/counts?event_id=${world.sent.toUpperCase()}`);
    expect(ofSent.body).toMatchObject({ counts: { pending: { count: 0 }, delivered: { count: 1 } } });
    const byKind = await owner.call<{ deliveries: unknown[] }>('GET', '/deliveries?kind=client.check');
    expect(byKind.body.deliveries).toEqual([]);
    for (const bad of [
      'kind=message',
      'event_id=123',
      'status=gone',
      'kind=message.status&kind=client.check',
    ]) {
      const refused = await owner.call<{ code: string; errors: { pointer: string }[] }>(
        'GET',
        `/deliveries?${bad}`,
      );
      expect({ bad, status: refused.status, code: refused.body.code }).toEqual({
        bad,
        status: 422,
        code: 'validation_failed',
      });
    }
    expect((await owner.call('GET', '/deliveries/counts?status=failed')).status).toBe(422);
  });

  for (const language of LANGUAGES)
    it(`opens on every status with counted tabs, searches by type and event id, and shows each endpoint's health (${language})`, async () => {
      const text = DELIVERIES[language];
      const page = await newPage(language, 1366);
      await signIn(page);
      await page.goto(`${stack.url}/deliveries`);
      await byTestId(page, 'deliveries-table').waitFor({ timeout: WAIT });
      const tabs = page.getByRole('tab');
      await expect
        .poll(() => byTestId(page, 'tab-count').allTextContents(), { timeout: WAIT })
        .toEqual(['2', '0', '1', '1']);
      expect((await tabs.allTextContents()).map((t) => t.replace(/\d+$/, ''))).toEqual(text.tabs);
      expect(await page.getByRole('tab', { selected: true }).textContent()).toBe(`${text.tabs[0]}2`);
      expect(await page.locator('[data-testid^="delivery-msg_"]').count()).toBe(2);
      // What each is about, in words, linked to its timeline, with its whole event id.
      const about = byTestId(page, `delivery-about`).filter({ hasText: text.about });
      expect(await about.getAttribute('href')).toBe(`/messages/${world.sent}`);
      expect(await page.locator('main').textContent()).toContain(world.sent);
      expect(await byTestId(page, 'delivery-kind-label').first().textContent()).toBe(text.kind);
      // Each endpoint's health, as the endpoints page has it.
      const health = byTestId(page, `health-${world.endpointId}`);
      expect(await health.locator('[data-testid="success-rate"]').textContent()).toMatch(/^50\s?%$/);
      expect(await health.locator('[data-testid="last-failure"]').textContent()).toContain('HTTP 503');
      // The date field of "retry every failed since" is written the app's way, whatever the browser speaks.
      expect(await byTestId(page, 'recover-since').textContent()).toMatch(
        language === 'ru' ? /^\d{1,2} [а-я]{3,}\.? \d{4}/ : /^[A-Z][a-z]{2} \d{1,2}, \d{4}/,
      );
      await look(page, `deliveries-${language}-1366-01-all`);

      // The pending tab, then a search by event id (the other message's): counts follow the filters.
      await page.getByRole('tab', { name: text.tabs[2] }).click();
      await expect.poll(() => page.locator('[data-testid^="delivery-msg_"]').count()).toBe(1);
      expect(page.url()).toContain('status=pending');
      await byTestId(page, 'delivery-event-id').fill('not-an-id');
      expect(await page.locator('main').textContent()).toContain(text.invalid);
      await byTestId(page, 'delivery-event-id').fill(world.sent);
      await byTestId(page, 'delivery-search').click();
      await expect.poll(() => byTestId(page, 'tab-count').allTextContents()).toEqual(['1', '0', '0', '1']);
      await byTestId(page, 'no-deliveries').waitFor();
      await page.getByRole('tab', { name: text.tabs[0] }).click();
      await expect.poll(() => page.locator('[data-testid^="delivery-msg_"]').count()).toBe(1);
      await look(page, `deliveries-${language}-1366-02-by-event-id`);

      // By type: no phone change was ever sent.
      await byTestId(page, 'delivery-clear').click();
      await byTestId(page, 'delivery-kind').click();
      await page.getByRole('option', { name: text.phoneChange }).click();
      await byTestId(page, 'delivery-search').click();
      await expect.poll(() => byTestId(page, 'tab-count').allTextContents()).toEqual(['0', '0', '0', '0']);
      await byTestId(page, 'no-deliveries').waitFor();
      await look(page, `deliveries-${language}-1366-03-by-type`);

      // An endpoint's name in the health list filters to it.
      await byTestId(page, 'delivery-clear').click();
      await health.locator('[data-testid="health-endpoint-name"]').click();
      await expect.poll(() => page.url()).toContain(`endpoint=${world.endpointId}`);
      await expect.poll(() => page.locator('[data-testid^="delivery-msg_"]').count()).toBe(2);
      await page.context().close();
    }, 120_000);
});
