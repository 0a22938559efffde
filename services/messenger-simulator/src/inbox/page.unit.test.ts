import { describe, expect, it } from 'vitest';
import { act, person, telegramBot, testWorld } from '../../test/world.js';
import { escapeHtml, html } from './html.js';
import { renderInbox } from './page.js';

describe('inbox page', () => {
  it('escapes whatever a bot or a person wrote, and makes only http(s) and tg links clickable', () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    const ivan = person(world, '79123456789', '<img src=x onerror=alert(1)>');
    act(world, ivan, bot, { type: 'start' });
    const chat = ivan.chats.get(bot.id)!;
    world.record(chat, {
      from: 'bot',
      messageId: 9,
      at: 0,
      text: '<script>alert("x")</script>',
      format: undefined,
      buttons: [
        [
          { text: 'Pay "now"', url: 'https://pay.example/?a=1&b=2' },
          { text: 'Later', kind: 'callback_data' },
        ],
      ],
    });
    const page = renderInbox(world, 'http://127.0.0.1:8090');
    expect(page).not.toContain('<script>alert');
    expect(page).not.toContain('<img src=x');
    expect(page).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(page).toContain(
      '<a class="button link" href="https://pay.example/?a=1&amp;b=2" target="_blank" rel="noopener noreferrer">Pay &quot;now&quot;</a>',
    );
    expect(page).toContain('<span class="button other" title="callback_data">Later</span>');
  });

  it('offers the actions that fit the chat: start, then share contact and block, then unblock', () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    const ivan = person(world);
    const testids = () =>
      [...renderInbox(world, 'x').matchAll(/data-testid="([a-z_]+)-\d+-\d+"/g)].map((m) => m[1]);
    expect(testids()).toEqual(['status', 'start']);
    act(world, ivan, bot, { type: 'start' });
    expect(testids()).toEqual(['status', 'share_contact', 'block']);
    act(world, ivan, bot, { type: 'block' });
    expect(testids()).toEqual(['status', 'start', 'unblock']);
  });

  it('html`` escapes values and keeps nested markup', () => {
    expect(escapeHtml(`<a href='x'>&</a>`)).toBe('&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;');
    expect(html`<p>${'<b>'}${html`<i>ok</i>`}${[1, 2]}${null}</p>`.value).toBe('<p>&lt;b&gt;<i>ok</i>12</p>');
  });
});
