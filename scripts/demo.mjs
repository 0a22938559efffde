// The demo of the compose stack (compose.yaml runs it once the registry and the simulator answer): a demo company
// with an API key, a Telegram and a MAX bot in the messenger simulator, its webhook pointed at the simulator's
// webhook inspector (which verifies every delivery); then it prints the README's quick start with the key.
// Plain Node, no dependency: it runs in any of the service images. Settings (all required):
//   MDS_DEMO_REGISTRY, MDS_DEMO_SIMULATOR     client-registry's and the simulator's addresses as seen from here
//   MDS_DEMO_ADMIN_TOKEN                      client-registry's admin token
//   MDS_DEMO_SIMULATOR_URL, MDS_DEMO_GATEWAY_URL   the simulator and the gateway as a person's shell reaches them
import { randomBytes } from 'node:crypto';

const settings = Object.fromEntries(
  ['REGISTRY', 'SIMULATOR', 'ADMIN_TOKEN', 'SIMULATOR_URL', 'GATEWAY_URL'].map((name) => {
    const value = process.env[`MDS_DEMO_${name}`];
    if (!value) {
      console.error(`demo: MDS_DEMO_${name} is not set`);
      process.exit(2);
    }
    return [name, value];
  }),
);

async function call(base, method, path, body, headers = {}) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (!response.ok) throw new Error(`${method} ${base}${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? {} : response.json();
}
const admin = (method, path, body) =>
  call(settings.REGISTRY, method, `/admin/v1${path}`, body, {
    authorization: `Bearer ${settings.ADMIN_TOKEN}`,
  });
const simulator = (method, path, body) => call(settings.SIMULATOR, method, path, body);

/** Waits (up to two minutes) until the registry and the simulator answer their readiness checks. */
async function waitForServices() {
  const deadline = Date.now() + 120_000;
  for (const base of [settings.REGISTRY, settings.SIMULATOR]) {
    for (;;) {
      const ok = await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`${base} did not become ready`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

await waitForServices();
const company = await admin('POST', '/companies', { name: 'Demo company' });
const { api_key: apiKey } = await admin('POST', `/companies/${company.company_id}/api-keys`, {
  label: 'demo',
});
const bots = [];
for (const [messenger, name, token] of [
  ['telegram', 'demo_shop', `7000000001:${randomBytes(26).toString('base64url').slice(0, 35)}`],
  ['max', 'demo_max', randomBytes(24).toString('base64url')],
]) {
  const created = await simulator('POST', '/control/bots', {
    messenger,
    username: `${name}_bot`,
    name,
    token,
  });
  await admin('POST', `/companies/${company.company_id}/bots`, { messenger, name, token, default: true });
  bots.push({ messenger, simulatorId: created.id });
}
const inspector = `${settings.SIMULATOR}/inspector/demo`;
await admin('PUT', `/companies/${company.company_id}/webhook`, { url: `${inspector}/hooks` });
const { secrets } = await admin('GET', `/companies/${company.company_id}/webhook/secrets`);
await simulator('PUT', '/control/inspector/demo', { secrets: secrets.map((s) => s.secret) });

const S = settings.SIMULATOR_URL;
const send = (service) =>
  `curl -s $G/api/v1/send -H "$K" -H "$J" -d '{"phone_number": "79123456789", "service": "${service}",
         "text": "Your order has shipped", "buttons": [{"text": "Track it", "url": "https://example.com/track"}]}'; echo`;
console.log(`Demo company ${company.company_id}, API key ${apiKey}

  Try it (paste each step into a shell):

  0. S=${S} G=${settings.GATEWAY_URL} J='Content-Type: application/json' K='X-API-Key: ${apiKey}'

  1. A simulated person starts both bots and shares their phone number (or click it in the inbox):
       curl -s $S/control/people -H "$J" -d '{"phone_number": "79123456789", "first_name": "Ivan"}'; echo
       for bot in ${bots.map((b) => b.simulatorId).join(' ')}; do for action in start share_contact; do
         curl -s $S/control/people/1/actions -H "$J" -d '{"action": "'$action'", "bot_id": '$bot'}'; echo
       done; done

  2. Ask whether the service knows them; the answer comes as a client.check webhook (step 4):
       curl -s $G/api/v1/client/check -H "$K" -H "$J" -d '{"phone_number": "79123456789"}'; echo

  3. Send a message with a link button, through Telegram and through MAX:
       ${send('telegram')}
       ${send('max')}

  4. See the message with its button in both of the person's chats:  ${S}/
     and the signed webhooks, each verified:  ${S}/inspector/demo
       curl -s $S/control/inspector/demo/webhooks   # the same as JSON
`);
