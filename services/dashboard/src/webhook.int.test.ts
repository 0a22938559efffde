// The webhook page and webhook deliveries against the real webhook-dispatcher (and client-registry, Kafka,
// PostgreSQL): a test event to a real endpoint, real deliveries that fail, wait, are resent and recovered.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEvent, topics, type Complete, type MessageEvent, type WebhookEvent } from '@mds/contracts';
import { createKafkaClient, readToEnd } from '@mds/kafka';
import { testInfra } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';
import {
  bot,
  companyWithOwner,
  eventually,
  startDashboardStack,
  type DashboardStack,
} from '../test/support.js';

const quiet = createLogger({ service: 'webhook-test', level: 'silent' });
let stack: DashboardStack;
let receiver: Server;
let receiverUrl = '';
/** What the receiver answers, per path; 200 when not set. */
const answers = new Map<string, number>();
const received: { path: string; headers: Record<string, string>; body: string }[] = [];

beforeAll(async () => {
  stack = await startDashboardStack();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({
        path,
        headers: req.headers as Record<string, string>,
        body: Buffer.concat(chunks).toString(),
      });
      res.writeHead(answers.get(path) ?? 200).end(answers.get(path) === 410 ? 'gone' : 'got it');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  await stack?.stop();
});

interface Row {
  webhook_status: string | null;
}

describe('the webhook', () => {
  it('is set, its secrets revealed and rotated with an overlap, and a test event shows what the endpoint answered', async () => {
    const { owner } = await companyWithOwner(stack, 'Hooks');
    expect((await owner.call('POST', '/webhook/test')).status).toBe(409);
    expect((await owner.call('PUT', '/webhook', { url: 'ftp://nope' })).status).toBe(422);
    const set = await owner.call<{ webhook: { url: string; enabled: boolean } }>('PUT', '/webhook', {
      url: `${receiverUrl}/hooks`,
    });
    expect(set.body.webhook).toMatchObject({ url: `${receiverUrl}/hooks`, enabled: true });
    const secrets = (
      await owner.call<{ secrets: { secret: string; expires_at: null }[] }>('POST', '/webhook/secrets')
    ).body.secrets;
    expect(secrets).toHaveLength(1);

    const test = await owner.call<{
      request: { body: string; headers: Record<string, string> };
      response: { outcome: string; status_code: number; excerpt: string };
    }>('POST', '/webhook/test');
    expect(test.body.response).toMatchObject({ outcome: 'succeeded', status_code: 200, excerpt: 'got it' });
    const arrived = received.find(
      (r) => r.headers['webhook-id'] === test.body.request.headers['webhook-id'],
    )!;
    expect(new Webhook(secrets[0]!.secret).verify(arrived.body, arrived.headers)).toMatchObject({
      type: 'webhook.test',
    });

    const rotated = await owner.call<{
      secret: string;
      webhook: { secrets: { expires_at: string | null }[] };
    }>('POST', '/webhook/rotate');
    expect(rotated.body.secret).toMatch(/^whsec_/);
    const overlap = rotated.body.webhook.secrets.map((s) => s.expires_at);
    expect(overlap.filter((e) => e === null)).toHaveLength(1);
    expect(overlap.filter((e) => e !== null)).toHaveLength(1);
    expect(
      (await owner.call<{ webhook: { enabled: boolean } }>('POST', '/webhook/disable')).body.webhook.enabled,
    ).toBe(false);
    expect(
      (await owner.call<{ webhook: { enabled: boolean } }>('POST', '/webhook/enable')).body.webhook.enabled,
    ).toBe(true);
  });
});

describe('webhook deliveries', () => {
  it('lists pending and failed ones, resends one and recovers every failed one through the dispatcher', async () => {
    const { owner, companyId } = await companyWithOwner(stack, 'Deliveries');
    const path = `/hooks/${randomUUID()}`;
    answers.set(path, 500);
    await owner.call('PUT', '/webhook', { url: `${receiverUrl}${path}` });
    const { botId } = await bot(stack, companyId);
    const sent = (id: string): Complete<MessageEvent> =>
      newEvent<MessageEvent>({
        eventId: randomUUID(),
        occurredAt: new Date(),
        companyId,
        streamId: id,
        producer: 'telegram-sender',
        event: {
          $case: 'messageSent',
          value: { botId, providerMessageId: '1', sentAt: new Date(), attempts: 1 },
        },
      });
    // A real outcome: the dispatcher delivers it to the endpoint, which fails, so it waits for a retry.
    const first = randomUUID();
    await stack.publisher.publish([{ topic: topics.message, key: first, record: sent(first) }] as never);
    const pending = await eventually(
      'a pending delivery',
      async () =>
        (
          await owner.call<{
            deliveries: { webhook_id: string; subject_id: string; last_status_code: number }[];
          }>('GET', '/deliveries?status=pending')
        ).body.deliveries[0],
    );
    expect(pending).toMatchObject({ subject_id: first, last_status_code: 500 });
    answers.set(path, 200);
    // The dispatcher publishes an attempt's events before it stores the attempt (results.ts): the read model can
    // show a delivery a moment before the dispatcher answers for it, so the resend is asked until it is known.
    await eventually(
      'the resend taken',
      async () => (await owner.call('POST', `/deliveries/${pending.webhook_id}/resend`)).status === 202,
    );
    await eventually('delivered after the resend', async () =>
      (
        await owner.call<{ deliveries: { webhook_id: string }[] }>('GET', '/deliveries?status=delivered')
      ).body.deliveries.some((d) => d.webhook_id === pending.webhook_id),
    );

    // 410 Gone: the endpoint is turned off and the delivery fails; once on again, recovery sends it.
    answers.set(path, 410);
    const second = randomUUID();
    await stack.publisher.publish([{ topic: topics.message, key: second, record: sent(second) }] as never);
    const failed = await eventually('a failed delivery', async () =>
      (
        await owner.call<{ deliveries: { subject_id: string }[] }>('GET', '/deliveries?status=failed')
      ).body.deliveries.find((d) => d.subject_id === second),
    );
    expect(failed).toBeTruthy();
    expect(
      (await owner.call<{ webhook: { enabled: boolean } }>('GET', '/webhook')).body.webhook.enabled,
    ).toBe(false);
    answers.set(path, 200);
    await owner.call('POST', '/webhook/enable');
    const recovered = await owner.call<{ recovered: number }>('POST', '/deliveries/recover', {
      since: new Date(Date.now() - 3_600_000).toISOString(),
    });
    expect([recovered.status, recovered.body.recovered]).toEqual([202, 1]);
    await eventually(
      'recovered and delivered',
      async () =>
        (await owner.call<{ message: Row }>('GET', `/messages/${second}`)).body.message?.webhook_status ===
        'delivered',
    );
    // The message page's resend: one more attempt, about this message only.
    expect((await owner.call('POST', `/messages/${second}/resend-webhook`)).status).toBe(202);
    await eventually(
      'a third attempt',
      async () =>
        (
          await owner.call<{ timeline: { type: string }[] }>('GET', `/messages/${second}`)
        ).body.timeline.filter((e) => e.type === 'WebhookAttempted').length === 3,
    );
    expect((await owner.call('POST', '/deliveries/recover', { since: 'yesterday' })).status).toBe(422);
  });

  it("shows each attempt's answer on the message page from the dispatcher's attempt log; the webhook events carry none", async () => {
    const { owner, companyId } = await companyWithOwner(stack, 'Answers');
    const path = `/hooks/${randomUUID()}`;
    await owner.call('PUT', '/webhook', { url: `${receiverUrl}${path}` });
    const { botId } = await bot(stack, companyId);
    const id = randomUUID();
    const sent = newEvent<MessageEvent>({
      eventId: randomUUID(),
      occurredAt: new Date(),
      companyId,
      streamId: id,
      producer: 'telegram-sender',
      event: {
        $case: 'messageSent',
        value: { botId, providerMessageId: '1', sentAt: new Date(), attempts: 1 },
      },
    });
    await stack.publisher.publish([{ topic: topics.message, key: id, record: sent }] as never);
    const attempt = await eventually('the attempt on the message page', async () => {
      const { body } = await owner.call<{ timeline: { type: string; data: Record<string, unknown> }[] }>(
        'GET',
        `/messages/${id}`,
      );
      return body.timeline?.find((e) => e.type === 'WebhookAttempted');
    });
    expect(attempt.data).toMatchObject({ attempt: 1, status_code: 200, response_excerpt: 'got it' });
    const events: WebhookEvent[] = [];
    await readToEnd<WebhookEvent>({
      kafka: createKafkaClient({ brokers: testInfra().kafkaBrokers, clientId: 'answers-test' }, quiet),
      logger: quiet,
      topics: [topics.webhook],
      topicPrefix: stack.topicPrefix,
      handleBatch: (batch) => {
        for (const e of batch) if (e.record.metadata?.companyId === companyId) events.push(e.record);
        return Promise.resolve();
      },
    });
    const attempted = events.find((e) => e.event?.$case === 'webhookAttempted');
    expect(attempted?.event?.value).toMatchObject({ statusCode: 200, responseExcerpt: '' });
  });
});
