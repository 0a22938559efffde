import { html, Html } from '../inbox/html.js';
import { INBOX_STYLE } from '../inbox/style.js';
import type { Delivery, WebhookInspector } from './inspector.js';

const STYLE = new Html(`
.delivery { border-top: 1px solid #d0d7de; padding: 10px 0; }
.delivery > header { display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }
.verdict { font-size: 12px; padding: 1px 8px; border-radius: 10px; }
.verdict.yes { background: #dafbe1; color: #1a7f37; }
.verdict.no { background: #ffebe9; color: #b42318; }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0; font-size: 13px; }
dl.fields dt { color: #656d76; }
dl.fields dd { margin: 0; font-family: monospace; word-break: break-all; }
pre { background: #f6f8fa; border: 1px solid #eaeef2; border-radius: 6px; padding: 6px 8px; font-size: 12px;
  white-space: pre-wrap; word-break: break-all; margin: 4px 0; }
.columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 10px; }
.warning { color: #9a6700; }
table.names { border-collapse: collapse; width: 100%; font-size: 13px; }
table.names td, table.names th { border-bottom: 1px solid #eaeef2; padding: 4px 6px; text-align: left; }
`);

/** Reloads the page when a new delivery arrived (unless text is being selected), every 2 s. */
const SCRIPT = new Html(`
(() => {
  const name = document.body.dataset.name;
  const latest = document.body.dataset.latest;
  setInterval(async () => {
    if (String(window.getSelection()) !== '') return;
    try {
      const res = await fetch('/control/inspector/' + encodeURIComponent(name));
      const body = await res.json();
      if (String(body.latest_seq) !== latest) location.reload();
    } catch {
      // the simulator is restarting; try again on the next tick
    }
  }, 2000);
})();
`);

function layout(title: string, body: Html, data: { name?: string; latest?: number } = {}): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title}</title>
        <style>
          ${INBOX_STYLE}
          ${STYLE}
        </style>
      </head>
      <body data-name="${data.name ?? ''}" data-latest="${data.latest ?? ''}">
        ${body}
        ${
          data.name === undefined
            ? ''
            : html`<script>
                ${SCRIPT};
              </script>`
        }
      </body>
    </html>`.value;
}

const hooksUrl = (publicUrl: string, name: string) =>
  `${publicUrl}/inspector/${encodeURIComponent(name)}/hooks`;
const pageUrl = (name: string) => `/inspector/${encodeURIComponent(name)}`;

/** The body pretty-printed when it is JSON, as it arrived otherwise. */
function prettyBody(delivery: Delivery): string {
  return delivery.json === undefined ? delivery.body : JSON.stringify(delivery.json, null, 2);
}

function field(label: string, value: string | undefined): Html {
  return value === undefined
    ? html``
    : html`<dt>${label}</dt>
        <dd>${value}</dd>`;
}

function deliveryCard(d: Delivery): Html {
  return html`<article class="delivery" data-seq="${d.seq}">
    <header>
      <strong>#${d.seq}</strong>
      <span>${new Date(d.receivedAt).toISOString()}</span>
      <span class="verdict ${d.verified ? 'yes' : 'no'}" data-testid="verdict-${d.seq}"
        >${d.verified ? 'verified' : `not verified: ${d.reason}`}</span
      >
      <span class="meta">${d.detail}</span>
    </header>
    <dl class="fields">
      ${field('webhook-id', d.webhookId ?? '(none)')} ${field('type', d.type)} ${field('event_id', d.eventId)}
      ${field('state', d.state)} ${field('error_code', d.errorCode)}
      ${field('error_description', d.errorDescription)}
    </dl>
    <div class="columns">
      <div>
        <div class="hint">headers</div>
        <pre>${Object.entries(d.headers).map(([k, v]) => `${k}: ${v}\n`)}</pre>
      </div>
      <div>
        <div class="hint">body</div>
        <pre>${prettyBody(d)}</pre>
      </div>
    </div>
  </article>`;
}

/** One inspector: where to send, whether it can verify, and every delivery kept, newest first. */
export function renderInspector(inspector: WebhookInspector, name: string, publicUrl: string): string {
  const deliveries = inspector.deliveries(name);
  const secrets = inspector.secretCount(name);
  return layout(
    `Webhooks: ${name}`,
    html`<header class="top">
        <h1>Webhook inspector: ${name}</h1>
        <p>
          Receives at <code>${hooksUrl(publicUrl, name)}</code> and keeps the last ${inspector.limits.perName}
          deliveries in memory (a restart forgets them). Each one is verified with the
          <code>standardwebhooks</code> library.
        </p>
        <p>
          ${
            secrets
              ? `${secrets} signing secret${secrets === 1 ? '' : 's'} registered.`
              : html`<span class="warning"
                  >No signing secret registered: nothing can verify. Register the company's secrets with
                  <code>PUT /control/inspector/${name} {"secrets": ["whsec_…"]}</code>.</span
                >`
          }
        </p>
        <p>
          <a href="${pageUrl(name)}">Refresh</a> (new deliveries show by themselves) ·
          <a href="/control/inspector/${encodeURIComponent(name)}/webhooks">JSON</a> ·
          <a href="/inspector">all inspectors</a> · <a href="/">inbox</a>
        </p>
      </header>
      <section class="panel">
        <h2>${deliveries.length} deliver${deliveries.length === 1 ? 'y' : 'ies'}, newest first</h2>
        ${deliveries.length ? deliveries.map(deliveryCard) : html`<p class="empty">Nothing received yet.</p>`}
      </section>`,
    { name, latest: inspector.latest(name) },
  );
}

/** Every inspector name in use. */
export function renderInspectorIndex(inspector: WebhookInspector, publicUrl: string): string {
  const names = inspector.names();
  return layout(
    'Webhook inspectors',
    html`<header class="top">
        <h1>Webhook inspectors</h1>
        <p>
          Point a webhook at <code>${publicUrl}/inspector/&lt;name&gt;/hooks</code> (any name) and see what
          arrives at <code>${publicUrl}/inspector/&lt;name&gt;</code>. <a href="/">Inbox</a>
        </p>
      </header>
      <section class="panel">
        ${
          names.length
            ? html`<table class="names">
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Secrets</th>
                    <th>Deliveries</th>
                    <th>Latest</th>
                  </tr>
                </thead>
                <tbody>
                  ${names.map(
                    (n) =>
                      html`<tr>
                        <td><a href="${pageUrl(n.name)}">${n.name}</a></td>
                        <td>${n.secrets}</td>
                        <td>${n.deliveries}</td>
                        <td>
                          ${
                            n.latest
                              ? `${new Date(n.latest.receivedAt).toISOString()} · ${n.latest.verified ? 'verified' : `not verified: ${n.latest.reason}`}`
                              : ''
                          }
                        </td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
            : html`<p class="empty">No inspector used yet.</p>`
        }
      </section>`,
  );
}
