// Several webhook endpoints per company (issue 36), with the whole service running as real processes: each
// endpoint receives exactly the notification types it subscribed to, signed with its own secret; an endpoint
// that keeps failing is disabled on its own while the others receive everything at their first attempt; a
// company set up with the single webhook URL of earlier versions keeps receiving through the services'
// restart onto this version and the addition of a second endpoint.
import { verifyWebhook } from '@mds/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@mds/local-infra/testing';
import type { Stack } from './harness.js';
import {
  startDeliveryStack,
  uniquePhone,
  type Sandbox,
  type SimulatedBot,
  type WebhookReceiver,
} from './sandbox.js';

/** The failure window after which an endpoint failing every attempt is disabled (hours in production). */
const DISABLE_AFTER_SECONDS = 6;
const WAIT_MS = 60_000;

let stack: Stack;
let sandbox: Sandbox;

beforeAll(async () => {
  ({ stack, sandbox } = await startDeliveryStack({
    without: ['dashboard', 'max-sender'],
    env: {
      'webhook-dispatcher': {
        // Retries every second for longer than the window: the failing endpoint is still failing when it ends.
        WEBHOOK_RETRY_SCHEDULE_SECONDS: Array.from({ length: 15 }, () => '1').join(','),
        WEBHOOK_RETRY_JITTER: '0',
        WEBHOOK_DISABLE_AFTER_HOURS: (DISABLE_AFTER_SECONDS / 3600).toFixed(6),
      },
    },
  }));
}, 180_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
});

interface EndpointView {
  id: string;
  url: string;
  event_types: string[];
  enabled: boolean;
  disabled_reason: string | null;
  disabled_automatically: boolean;
}

const endpointsOf = async (companyId: string) =>
  (await sandbox.admin<{ endpoints: EndpointView[] }>('GET', `/companies/${companyId}/webhook/endpoints`))
    .endpoints;

async function companyWithLinkedPerson(name: string) {
  const company = await sandbox.company(name);
  const bot: SimulatedBot = await sandbox.bot(company.companyId, 'telegram', name.replace(/ /g, '-'));
  const person = await sandbox.linkedPerson(company.companyId, bot);
  const send = (text: string) =>
    sandbox.send(company.apiKey, { phone_number: person.phone, text, service: 'telegram' });
  return { company, bot, person, send };
}

/** The types of the notifications an endpoint received, by the event they are about. */
const received = (webhooks: WebhookReceiver) =>
  webhooks.received.map((w) => `${String(w.payload?.type)}:${String(w.payload?.event_id)}`);

/** A counter summed over the dispatcher's replicas (their ops listeners' /metrics). */
async function dispatcherMetric(name: string, labels: string): Promise<number> {
  let total = 0;
  for (const { service, replica } of stack.processes()) {
    if (service !== 'webhook-dispatcher') continue;
    const text = await (await fetch(`${replica.opsUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
    total += line ? Number(line.split(' ').pop()) : 0;
  }
  return total;
}

describe('webhook endpoints', () => {
  it('two endpoints with different subscriptions each receive exactly their events, signed with their own secrets', async () => {
    const { company, person, send } = await companyWithLinkedPerson('Two endpoints');
    const production = await sandbox.endpoint(company.companyId, {
      description: 'production',
      event_types: ['message.status'],
    });
    const analytics = await sandbox.endpoint(company.companyId, {
      description: 'analytics',
      event_types: ['client.check', 'client.phone_changed'],
    });
    expect(production.secret).not.toBe(analytics.secret);

    const messageId = await send('Your order has shipped');
    const sdk = sandbox.sdk(company.apiKey);
    const checkId = (await sdk.checkClient({ phone_number: person.phone })).event_id;
    await sandbox.finishedState(company.apiKey, messageId);
    await sandbox.finishedState(company.apiKey, checkId);
    const changeId = (await sdk.changePhone({ old_phone: person.phone, new_phone: uniquePhone() })).event_id;
    await sandbox.finishedState(company.apiKey, changeId);

    await production.webhooks.waitFor(messageId, WAIT_MS);
    await analytics.webhooks.waitFor(checkId, WAIT_MS);
    await analytics.webhooks.waitFor(changeId, WAIT_MS);
    // Everything the three outcomes cause has been fanned out by now; anything misrouted would come too.
    await sleep(2_000);
    expect(received(production.webhooks)).toEqual([`message.status:${messageId}`]);
    expect(received(analytics.webhooks).sort()).toEqual(
      [`client.check:${checkId}`, `client.phone_changed:${changeId}`].sort(),
    );

    // Each verifies with its endpoint's secret (the SDK, as a receiver would) and not with the other's.
    for (const [mine, theirs] of [
      [production, analytics],
      [analytics, production],
    ] as const) {
      for (const webhook of mine.webhooks.received) {
        expect(webhook.verified).toBe(true);
        expect(verifyWebhook(webhook.body, webhook.headers, [mine.secret])).toEqual(webhook.payload);
        expect(() => verifyWebhook(webhook.body, webhook.headers, [theirs.secret])).toThrow();
      }
    }
    const ids = [...production.webhooks.received, ...analytics.webhooks.received].map(
      (w) => w.headers['webhook-id'],
    );
    expect(new Set(ids).size).toBe(3);
  });

  it('an endpoint answering 500 for the whole window is disabled on its own while the other receives everything at the first attempt', async () => {
    const { company, send } = await companyWithLinkedPerson('One failing endpoint');
    const healthy = await sandbox.endpoint(company.companyId, { description: 'healthy' });
    const failing = await sandbox.endpoint(company.companyId, { description: 'failing' });
    failing.webhooks.respond = () => 500;
    const disabledBefore = await dispatcherMetric('mds_webhook_endpoints_disabled_total', 'failing');

    // Messages for longer than the window: the healthy endpoint gets each once, at its first attempt.
    const sent: string[] = [];
    for (let i = 0; i < 5; i++) {
      sent.push(await send(`update ${i}`));
      await sleep((DISABLE_AFTER_SECONDS * 1000) / 4);
    }
    for (const id of sent) await healthy.webhooks.waitFor(id, WAIT_MS);
    expect(received(healthy.webhooks)).toEqual(sent.map((id) => `message.status:${id}`));

    const disabled = await eventually(
      'the failing endpoint disabled',
      async () =>
        (await endpointsOf(company.companyId)).find((e) => e.id === failing.endpointId && !e.enabled),
      WAIT_MS,
    );
    expect(disabled).toMatchObject({ enabled: false, disabled_automatically: true });
    expect(disabled.disabled_reason).toBeTruthy();
    expect((await endpointsOf(company.companyId)).find((e) => e.id === healthy.endpointId)).toMatchObject({
      enabled: true,
    });
    await eventually(
      'the disabling counted',
      async () =>
        (await dispatcherMetric('mds_webhook_endpoints_disabled_total', 'failing')) > disabledBefore,
      WAIT_MS,
    );

    // Once disabled it is not tried again; the healthy one still receives.
    await sleep(2_000);
    const failingCount = failing.webhooks.received.length;
    const after = await send('after the failing endpoint was disabled');
    await healthy.webhooks.waitFor(after, WAIT_MS);
    await sleep(2_000);
    expect(failing.webhooks.received).toHaveLength(failingCount);
    expect(failing.webhooks.about(after)).toEqual([]);
  });

  it("a company with the earlier single webhook URL keeps receiving, without a gap, through the services' restart and a second endpoint's addition", async () => {
    const company = await sandbox.companyWithWebhooks('Single URL');
    const bot = await sandbox.bot(company.companyId, 'telegram', 'single-url');
    const person = await sandbox.linkedPerson(company.companyId, bot);
    const send = (text: string) =>
      sandbox.send(company.apiKey, { phone_number: person.phone, text, service: 'telegram' });

    // The URL set through the single-URL API is the company's first endpoint, ep_default.
    expect(await endpointsOf(company.companyId)).toEqual([
      expect.objectContaining({
        id: 'ep_default',
        url: company.webhooks.url,
        event_types: [],
        enabled: true,
      }),
    ]);

    const sent: string[] = [];
    let second: Awaited<ReturnType<Sandbox['endpoint']>> | undefined;
    let sending = true;
    const sender = (async () => {
      for (let i = 0; sending && i < 200; i++) {
        // A send the gateway refuses while the registry restarts was never accepted: only accepted ones count.
        await send(`steady ${i}`).then(
          (id) => sent.push(id),
          () => undefined,
        );
        await sleep(250);
      }
    })();
    try {
      await sleep(1_000);
      await stack.service('client-registry').restart('SIGTERM');
      await stack.service('webhook-dispatcher').restart('SIGTERM');
      await sleep(1_000);
      second = await sandbox.endpoint(company.companyId, { description: 'second' });
      await sleep(2_000);
    } finally {
      sending = false;
      await sender;
    }
    const afterSecond = await send('after the second endpoint');
    sent.push(afterSecond);

    for (const id of sent) await company.webhooks.waitFor(id, WAIT_MS);
    for (const webhook of company.webhooks.received) {
      expect(webhook.verified).toBe(true);
      expect(verifyWebhook(webhook.body, webhook.headers, company.secrets)).toEqual(webhook.payload);
    }
    expect(new Set(company.webhooks.received.map((w) => w.payload?.event_id))).toEqual(new Set(sent));
    // The second endpoint receives what happened after it was added, with its own secret.
    expect((await second.webhooks.waitFor(afterSecond, WAIT_MS)).verified).toBe(true);
    expect((await endpointsOf(company.companyId)).map((e) => e.id)).toEqual([
      'ep_default',
      second.endpointId,
    ]);
    // The single-URL API still answers for ep_default.
    expect(
      await sandbox.admin<{ secrets: { secret: string }[] }>(
        'GET',
        `/companies/${company.companyId}/webhook/secrets`,
      ),
    ).toMatchObject({ secrets: company.secrets.map((secret) => ({ secret })) });
  });
});
