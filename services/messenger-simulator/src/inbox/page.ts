import type { Bot, ButtonView, Chat, ChatEntry, Person } from '../domain/types.js';
import type { World } from '../domain/world.js';
import { html, safeHref, shown, type Html } from './html.js';
import { INBOX_SCRIPT } from './script.js';
import { INBOX_STYLE } from './style.js';

const MESSENGER = { telegram: 'Telegram', max: 'MAX' } as const;

function time(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19);
}

function button(b: ButtonView): Html {
  const href = b.url && safeHref(b.url);
  return href
    ? html`<a class="button link" href="${href}" target="_blank" rel="noopener noreferrer">${b.text}</a>`
    : html`<span class="button other" title="${b.kind ?? 'button'}">${b.text}</span>`;
}

function rows(buttons: ButtonView[][], cls: string): Html {
  if (buttons.length === 0) return html``;
  return html`<div class="${cls}">
    ${buttons.map((row) => html`<div class="row">${row.map(button)}</div>`)}
  </div>`;
}

function entry(e: ChatEntry): Html {
  const side = e.from === 'bot' ? 'from-bot' : 'from-person';
  return html`<li class="message ${side}" data-message-id="${e.messageId ?? ''}">
    <div class="text">${shown(e.text, 4096)}</div>
    ${rows(e.buttons, 'keyboard')}
    ${
      e.replyKeyboard
        ? html`<div class="hint">reply keyboard:</div>
            ${rows(e.replyKeyboard, 'reply-keyboard')}`
        : ''
    }
    <div class="meta">${time(e.at)}${e.format ? ` · ${e.format}` : ''}</div>
  </li>`;
}

function actionButton(person: Person, bot: Bot, action: string, label: string): Html {
  return html`<button
    type="button"
    data-action="${action}"
    data-person="${person.id}"
    data-bot="${bot.id}"
    data-testid="${action}-${person.id}-${bot.id}"
  >
    ${label}
  </button>`;
}

function chatPanel(person: Person, bot: Bot, chat: Chat | undefined): Html {
  const status = chat ? chat.status : 'not started';
  const actions: Html[] = [];
  if (!person.deactivated) {
    if (!chat || chat.status === 'blocked') actions.push(actionButton(person, bot, 'start', 'Start bot'));
    if (chat?.status === 'active') {
      actions.push(actionButton(person, bot, 'share_contact', 'Share contact'));
      actions.push(actionButton(person, bot, 'block', bot.messenger === 'max' ? 'Stop bot' : 'Block'));
    }
    if (chat?.status === 'blocked') actions.push(actionButton(person, bot, 'unblock', 'Unblock'));
  }
  return html`<section class="chat ${status.replace(' ', '-')}" data-chat="${person.id}-${bot.id}">
    <header>
      <span class="badge ${bot.messenger}">${MESSENGER[bot.messenger]}</span>
      <strong>@${bot.username}</strong>
      <span class="status" data-testid="status-${person.id}-${bot.id}">${status}</span>
    </header>
    <ul class="transcript">
      ${chat ? chat.transcript.map(entry) : html`<li class="empty">No messages.</li>`}
    </ul>
    <div class="actions">${actions}</div>
    ${
      chat?.status === 'active' && !person.deactivated
        ? html`<form class="send-text" data-person="${person.id}" data-bot="${bot.id}">
            <input name="text" placeholder="Write to @${bot.username}" maxlength="4096" required />
            <button type="submit">Send</button>
          </form>`
        : ''
    }
  </section>`;
}

function personCard(person: Person, bots: Bot[]): Html {
  return html`<article
    class="person${person.deactivated ? ' deactivated' : ''}"
    data-person-id="${person.id}"
  >
    <header>
      <h3 data-testid="name-${person.id}">
        ${shown(`${person.firstName} ${person.lastName ?? ''}`.trim(), 80)}
      </h3>
      <span class="phone">+${person.phone}</span>
      <span class="ids"
        >#${person.id} · Telegram id ${person.telegramUserId} · MAX id ${person.maxUserId}</span
      >
      ${
        person.deactivated
          ? html`<span class="status">account deactivated</span>`
          : html`<button
              type="button"
              class="danger"
              data-action="deactivate"
              data-person="${person.id}"
              data-testid="deactivate-${person.id}"
            >
              Deactivate account
            </button>`
      }
    </header>
    <div class="chats">
      ${bots.length ? bots.map((bot) => chatPanel(person, bot, person.chats.get(bot.id))) : html`<p class="empty">No bots yet.</p>`}
    </div>
  </article>`;
}

function botRow(bot: Bot): Html {
  const delivery =
    bot.messenger === 'telegram'
      ? bot.webhook
        ? `webhook ${bot.webhook.url}`
        : 'long polling'
      : bot.subscriptions.length
        ? `webhook ${bot.subscriptions.map((s) => s.url).join(', ')}`
        : 'long polling';
  return html`<tr>
    <td><span class="badge ${bot.messenger}">${MESSENGER[bot.messenger]}</span></td>
    <td>@${bot.username}</td>
    <td>${bot.name}</td>
    <td><code>${bot.token}</code></td>
    <td>${delivery}</td>
    <td>${bot.updates.size}</td>
  </tr>`;
}

/** The web inbox: simulated people, their chats with every bot, and what they can do there. */
export function renderInbox(world: World, publicUrl: string): string {
  const bots = [...world.bots.values()];
  const people = [...world.people.values()];
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>Messenger simulator inbox</title>
        <style>
          ${INBOX_STYLE}
        </style>
      </head>
      <body data-version="${world.version}">
        <header class="top">
          <h1>Messenger simulator</h1>
          <p>
            Telegram <code>apiRoot</code> and MAX <code>baseUrl</code>: <code>${publicUrl}</code>. State lives
            in memory; a restart forgets it.
          </p>
          <p>
            Webhooks sent to <code>${publicUrl}/inspector/&lt;name&gt;/hooks</code> show in the
            <a href="/inspector" data-testid="inspector-link">webhook inspector</a>.
          </p>
          <p id="notice" role="status"></p>
        </header>
        <section class="panel">
          <h2>Bots</h2>
          ${
            bots.length
              ? html`<table class="bots">
                  <thead>
                    <tr>
                      <th></th>
                      <th>Username</th>
                      <th>Name</th>
                      <th>Token</th>
                      <th>Updates go to</th>
                      <th>Pending</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${bots.map(botRow)}
                  </tbody>
                </table>`
              : html`<p class="empty">No bots yet.</p>`
          }
          <form id="create-bot" class="inline">
            <select name="messenger">
              <option value="telegram">Telegram</option>
              <option value="max">MAX</option>
            </select>
            <input name="username" placeholder="username (Telegram: …bot)" required />
            <input name="name" placeholder="display name" />
            <button type="submit">Create bot</button>
          </form>
        </section>
        <section class="panel">
          <h2>People</h2>
          <form id="create-person" class="inline">
            <input name="phone_number" placeholder="phone, e.g. 79123456789" required />
            <input name="first_name" placeholder="first name" required />
            <button type="submit" data-testid="create-person">Create person</button>
          </form>
          ${people.length ? people.map((p) => personCard(p, bots)) : html`<p class="empty">No people yet.</p>`}
        </section>
        <script>
          ${INBOX_SCRIPT};
        </script>
      </body>
    </html>`.value;
}
