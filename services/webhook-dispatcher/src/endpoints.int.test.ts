import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { createTestDatabase, uniqueName } from '@mds/local-infra/testing';
import type { EventPublisher } from '@mds/kafka';
import {
  collectWebhookEvents,
  eventually,
  ManualClock,
  messageSent,
  outcomePublisher,
  publishMessages,
  publishRequests,
  Receiver,
  registrySetup,
  requestEvent,
  startTestDispatcher,
  startTestRegistry,
  type DispatcherHandle,
  type RegistryHandle,
} from '../test/support.js';

// Several endpoints per company, against the real registry (its admin API and account events on the same
// topics), broker and database: each endpoint gets the notifications it subscribed to, signed with its own
// secret, and is disabled on its own; the dispatcher reads a company's endpoints once, and again only after an
// account event of that company.

interface DeliveryView {
  webhook_id: string;
  endpoint_id: string;
  url: string | null;
  status: string;
  last_error: string | null;
}

let registry: RegistryHandle;
let receiver: Receiver;
let dispatcher: DispatcherHandle;
let publisher: EventPublisher;
let webhookEvents: Awaited<ReturnType<typeof collectWebhookEvents>>;
const clock = new ManualClock();
const topicPrefix = `${uniqueName('whep')}.`;

beforeAll(async () => {
  [registry, receiver] = await Promise.all([
    startTestRegistry(await registrySetup(0, topicPrefix)),
    new Receiver().start(),
  ]);
  dispatcher = await startTestDispatcher({
    registry,
    databaseUrl: await createTestDatabase('whep'),
    topicPrefix,
    clock,
    env: { WEBHOOK_DISABLE_AFTER_HOURS: '1' },
  });
  publisher = outcomePublisher(topicPrefix);
  await publisher.connect();
  webhookEvents = await collectWebhookEvents(topicPrefix);
}, 120_000);

afterAll(async () => {
  await webhookEvents?.stop();
  await publisher?.disconnect();
  await dispatcher?.stop();
  await registry?.stop();
  await receiver?.close();
});

const newCompany = async () =>
  (await registry.admin<{ company_id: string }>('POST', '/companies', { name: 'Several hooks' })).body
    .company_id;
const deliveriesOf = async (eventId: string) =>
  (await dispatcher.admin<{ deliveries: DeliveryView[] }>('GET', `/deliveries/${eventId}`)).body.deliveries ??
  [];
/** A metric of the dispatcher's /metrics: the sum of its series with this label (or all of them). */
const metric = async (name: string, label = '') => {
  const text = await (await fetch(`${dispatcher.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(label))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
};
const settle = () => new Promise((r) => setTimeout(r, 500));

describe('two endpoints of one company', () => {
  it('each receive exactly the types they subscribed to, signed with their own secret, with their own ids', async () => {
    const companyId = await newCompany();
    const [statusPath, requestsPath] = [receiver.endpoint(), receiver.endpoint()];
    const statuses = await registry.endpoint(
      companyId,
      { url: `${receiver.url}${statusPath}`, event_types: ['message.status'] },
      receiver,
    );
    const requests = await registry.endpoint(
      companyId,
      { url: `${receiver.url}${requestsPath}`, event_types: ['client.check', 'client.phone_changed'] },
      receiver,
    );
    const sent = [messageSent(companyId), messageSent(companyId)];
    const check = requestEvent(companyId, {
      $case: 'clientChecked',
      value: { phoneNumber: '79123456789', exists: false, bots: [] },
    });
    const rejected = requestEvent(companyId, {
      $case: 'phoneChangeRejected',
      value: { errorCode: 'OLD_PHONE_NOT_FOUND', errorDescription: 'no client with old_phone' },
    });
    await publishMessages(publisher, sent);
    await publishRequests(publisher, [check, rejected]);

    await eventually(
      'both endpoints served',
      () => receiver.at(statusPath).length >= 2 && receiver.at(requestsPath).length >= 2,
    );
    await settle();
    const typesAt = (path: string) =>
      receiver.at(path).map((r) => (JSON.parse(r.body) as { type: string }).type);
    expect(typesAt(statusPath)).toEqual(['message.status', 'message.status']);
    expect(typesAt(requestsPath).sort()).toEqual(['client.check', 'client.phone_changed']);
    // Each verified with its own secret (the receiver checks on arrival), and not with the other's.
    for (const r of [...receiver.at(statusPath), ...receiver.at(requestsPath)]) expect(r.verified).toBe(true);
    const one = receiver.at(statusPath)[0]!;
    expect(() => new Webhook(requests.secret).verify(one.body, one.headers)).toThrow();

    // One delivery per (notification, subscribed endpoint), each with its endpoint, URL and webhook-id.
    for (const s of sent) {
      const ds = await deliveriesOf(s.metadata.streamId);
      expect(ds).toMatchObject([
        { endpoint_id: statuses.endpointId, url: `${receiver.url}${statusPath}`, status: 'delivered' },
      ]);
    }
    const [checked] = await deliveriesOf(check.metadata.streamId);
    expect(checked).toMatchObject({ endpoint_id: requests.endpointId, status: 'delivered' });
    const ids = [...receiver.at(statusPath), ...receiver.at(requestsPath)].map(
      (r) => r.headers['webhook-id'],
    );
    expect(new Set(ids).size).toBe(4);
    // mds.webhook.v1 says which endpoint each attempt went to.
    const events = await eventually('their webhook events', () => {
      const mine = webhookEvents.events.filter((e) => e.metadata.companyId === companyId);
      return mine.filter((e) => e.event?.$case === 'webhookDelivered').length >= 4 && mine;
    });
    for (const e of events) {
      const value = e.event.value as { endpointId: string };
      expect([statuses.endpointId, requests.endpointId]).toContain(value.endpointId);
    }
  });
});

describe('an endpoint failing for the whole window', () => {
  it('is disabled on its own, counted, while the other endpoint receives everything', async () => {
    const companyId = await newCompany();
    const [failingPath, healthyPath] = [
      receiver.endpoint((_req, res) => void res.writeHead(500).end('down')),
      receiver.endpoint(),
    ];
    const failing = await registry.endpoint(companyId, { url: `${receiver.url}${failingPath}` }, receiver);
    await registry.endpoint(companyId, { url: `${receiver.url}${healthyPath}` }, receiver);
    const disabledBefore = await metric('mds_webhook_endpoints_disabled_total', 'reason="failing"');

    const first = messageSent(companyId);
    await publishMessages(publisher, [first]);
    await eventually('the first failure', () => receiver.at(failingPath).length >= 1);
    clock.advance(61 * 60_000);
    const second = messageSent(companyId);
    await publishMessages(publisher, [second]);
    const view = await eventually('auto-disabled', async () => {
      const got = await registry.admin<{
        enabled: boolean;
        disabled_automatically: boolean;
        disabled_reason: string;
      }>('GET', `/companies/${companyId}/webhook/endpoints/${failing.endpointId}`);
      return !got.body.enabled && got.body;
    });
    expect(view).toMatchObject({ disabled_automatically: true });
    expect(view.disabled_reason).toMatch(/every attempt failed since/);
    expect(await metric('mds_webhook_endpoints_disabled_total', 'reason="failing"')).toBe(disabledBefore + 1);

    await settle();
    const failedSoFar = receiver.at(failingPath).length;
    const third = messageSent(companyId);
    await publishMessages(publisher, [third]);
    await eventually('the healthy endpoint has all three', () => receiver.at(healthyPath).length >= 3);
    const [toFailing] = await eventually('the third delivery to the disabled endpoint ended', async () => {
      const ds = (await deliveriesOf(third.metadata.streamId)).filter(
        (d) => d.endpoint_id === failing.endpointId,
      );
      return ds[0]?.status === 'failed' && ds;
    });
    expect(toFailing!.last_error).toBe('the webhook endpoint is disabled');
    expect(receiver.at(failingPath)).toHaveLength(failedSoFar);
    const bodies = receiver.at(healthyPath).map((r) => (JSON.parse(r.body) as { event_id: string }).event_id);
    expect(bodies.sort()).toEqual([first, second, third].map((m) => m.metadata.streamId).sort());
  });
});

describe('the endpoint view', () => {
  it('reads a company once for many notifications, and again only after an account event of it', async () => {
    const companyId = await newCompany();
    const [before, after] = [receiver.endpoint(), receiver.endpoint()];
    const { endpointId } = await registry.endpoint(companyId, { url: `${receiver.url}${before}` }, receiver);
    await settle();
    const reads0 = await metric('mds_webhook_endpoint_reads_total');
    await publishMessages(
      publisher,
      Array.from({ length: 20 }, () => messageSent(companyId)),
    );
    await eventually('twenty webhooks', () => receiver.at(before).length >= 20);
    expect(await metric('mds_webhook_endpoint_reads_total')).toBe(reads0 + 1);

    // A change in the registry is an account event: the next notifications go where it says.
    const secret = (
      await registry.admin<{ secrets: { secret: string }[] }>(
        'GET',
        `/companies/${companyId}/webhook/endpoints/${endpointId}/secrets`,
      )
    ).body.secrets[0]!.secret;
    receiver.verifyWith(after, [secret]);
    const patched = await registry.admin('PATCH', `/companies/${companyId}/webhook/endpoints/${endpointId}`, {
      url: `${receiver.url}${after}`,
    });
    expect(patched.status).toBe(200);
    await eventually('a webhook at the new URL', async () => {
      await publishMessages(publisher, [messageSent(companyId)]);
      await settle();
      return receiver.at(after).length > 0;
    });
    const reads1 = await metric('mds_webhook_endpoint_reads_total');
    expect(reads1).toBeGreaterThan(reads0 + 1);
    const atBefore = receiver.at(before).length;
    await publishMessages(
      publisher,
      Array.from({ length: 10 }, () => messageSent(companyId)),
    );
    await eventually('ten more at the new URL', () => receiver.at(after).length >= 11);
    expect(receiver.at(before)).toHaveLength(atBefore);
    expect(receiver.at(after).every((r) => r.verified)).toBe(true);
    expect(await metric('mds_webhook_endpoint_reads_total')).toBe(reads1);
  });
});

describe('the admin API per endpoint', () => {
  it('sends a test event to the endpoint named, recovers one endpoint, and refuses unknown endpoints', async () => {
    const companyId = await newCompany();
    const [aPath, bPath] = [receiver.endpoint(), receiver.endpoint()];
    await registry.endpoint(companyId, { url: `${receiver.url}${aPath}` }, receiver);
    const b = await registry.endpoint(companyId, { url: `${receiver.url}${bPath}` }, receiver);

    const test = await dispatcher.admin<{ endpoint_id: string; response: { outcome: string } }>(
      'POST',
      `/companies/${companyId}/test-event`,
      { endpoint_id: b.endpointId },
    );
    expect(test).toMatchObject({
      status: 200,
      body: { endpoint_id: b.endpointId, response: { outcome: 'succeeded' } },
    });
    expect(receiver.at(bPath)).toMatchObject([{ verified: true }]);
    expect(receiver.at(aPath)).toHaveLength(0);

    const which = await dispatcher.admin('POST', `/companies/${companyId}/test-event`);
    expect(which).toMatchObject({ status: 422, body: { code: 'webhook_endpoint_required' } });
    const unknown = await dispatcher.admin('POST', `/companies/${companyId}/test-event`, {
      endpoint_id: 'ep_0000000000000000000000',
    });
    expect(unknown).toMatchObject({ status: 404, body: { code: 'webhook_endpoint_not_found' } });
    const malformed = await dispatcher.admin('POST', `/companies/${companyId}/test-event`, {
      endpoint_id: 'x',
    });
    expect(malformed).toMatchObject({ status: 422, body: { code: 'validation_failed' } });

    const since = new Date(clock.at.getTime() - 60_000).toISOString();
    const recoverUnknown = await dispatcher.admin('POST', `/companies/${companyId}/recover`, {
      since,
      endpoint_id: 'ep_0000000000000000000000',
    });
    expect(recoverUnknown).toMatchObject({ status: 404, body: { code: 'webhook_endpoint_not_found' } });
    const recovered = await dispatcher.admin('POST', `/companies/${companyId}/recover`, {
      since,
      endpoint_id: b.endpointId,
    });
    expect(recovered).toMatchObject({ status: 202, body: { recovered: 0 } });
  });
});
