import { Html } from './html.js';

/** The inbox's only script: buttons and forms call the control API, then the page reloads. */
export const INBOX_SCRIPT = new Html(`
(() => {
  const notice = document.getElementById('notice');
  const show = (text) => { notice.textContent = text; notice.className = 'bad'; };
  async function post(path, body) {
    const res = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) {
      const failure = await res.json().catch(() => ({}));
      throw new Error((failure.error && failure.error.message) || res.statusText);
    }
  }
  async function run(work) {
    try {
      await work();
      location.reload();
    } catch (error) {
      show(error.message);
    }
  }
  document.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-action]');
    if (!button) return;
    const body = { action: button.dataset.action };
    if (button.dataset.bot) body.bot_id = Number(button.dataset.bot);
    button.disabled = true;
    run(() => post('/control/people/' + button.dataset.person + '/actions', body)).finally(() => {
      button.disabled = false;
    });
  });
  document.addEventListener('submit', (event) => {
    const form = event.target;
    event.preventDefault();
    const data = Object.fromEntries(new FormData(form));
    if (form.id === 'create-person') run(() => post('/control/people', data));
    else if (form.id === 'create-bot') run(() => post('/control/bots', data));
    else if (form.classList.contains('send-text')) {
      run(() =>
        post('/control/people/' + form.dataset.person + '/actions', {
          action: 'send_text',
          bot_id: Number(form.dataset.bot),
          text: data.text,
        }),
      );
    }
  });
  // New messages arrive without a click: reload when the world changed, unless someone is typing.
  const version = document.body.dataset.version;
  setInterval(async () => {
    const active = document.activeElement;
    if (active && ['INPUT', 'SELECT', 'TEXTAREA'].includes(active.tagName)) return;
    try {
      const res = await fetch('/control/version');
      const body = await res.json();
      if (String(body.version) !== version) location.reload();
    } catch {
      // the simulator is restarting; try again on the next tick
    }
  }, 2000);
})();
`);
