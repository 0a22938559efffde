// The event catalogue the webhook page shows is checked against what the dispatcher really sends, and every
// string of the web application exists, well-formed, in both languages.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse, TYPE, type MessageFormatElement } from '@formatjs/icu-messageformat-parser';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { newEvent, type ClientRequestEvent, type MessageEvent } from '@mds/contracts';
import { webhookBodyOf } from '@mds/contracts/webhooks';
import { en } from '../web/src/i18n/en.js';
import { ru } from '../web/src/i18n/ru.js';
import { WEBHOOK_CATALOGUE } from './domain/webhook-catalogue.js';

const ajv = new Ajv2020.default({ strict: false });
addFormats.default(ajv);
const validator = (type: string) => ajv.compile(WEBHOOK_CATALOGUE.find((e) => e.type === type)!.schema);
const meta = {
  eventId: '8c1f0f63-53a4-4b8e-9a0c-1c2d3e4f5a6b',
  occurredAt: new Date('2026-11-21T12:00:00Z'),
  companyId: 'c',
  streamId: '0b9f6a52-2f7e-4a8e-9a51-1c6f0e3d2b11',
  producer: 'p',
};

describe('the webhook catalogue', () => {
  it("describes the dispatcher's real bodies exactly, and its examples fit its schemas", () => {
    const bodies: [string, unknown][] = [
      [
        'message.status',
        webhookBodyOf(
          newEvent<MessageEvent>({
            ...meta,
            event: {
              $case: 'messageSent',
              value: { botId: 'b', providerMessageId: '1', sentAt: meta.occurredAt, attempts: 1 },
            },
          }),
        ),
      ],
      [
        'message.status',
        webhookBodyOf(
          newEvent<MessageEvent>({
            ...meta,
            event: {
              $case: 'messageDeliveryFailed',
              value: {
                errorCode: 'CLIENT_NOT_FOUND',
                errorDescription: 'no',
                failedAt: meta.occurredAt,
                attempts: 0,
                botId: '',
              },
            },
          }),
        ),
      ],
      [
        'client.check',
        webhookBodyOf(
          newEvent<ClientRequestEvent>({
            ...meta,
            event: {
              $case: 'clientChecked',
              value: {
                phoneNumber: '79123456789',
                exists: true,
                bots: [{ messenger: 1, botName: 'shop', reachable: true }],
              },
            },
          }),
        ),
      ],
      [
        'client.phone_changed',
        webhookBodyOf(
          newEvent<ClientRequestEvent>({
            ...meta,
            event: {
              $case: 'phoneChanged',
              value: { oldPhone: '79123456789', newPhone: '79123456780', linksMoved: 1 },
            },
          }),
        ),
      ],
      [
        'client.phone_changed',
        webhookBodyOf(
          newEvent<ClientRequestEvent>({
            ...meta,
            event: {
              $case: 'phoneChangeRejected',
              value: { errorCode: 'SAME_PHONE', errorDescription: 'same' },
            },
          }),
        ),
      ],
      ...WEBHOOK_CATALOGUE.map((e): [string, unknown] => [e.type, e.example]),
    ];
    for (const [type, body] of bodies) {
      const validate = validator(type);
      expect([type, validate(body), validate.errors ?? null]).toEqual([type, true, null]);
    }
    // And the schemas are not so loose that anything fits.
    expect(
      validator('message.status')({
        type: 'message.status',
        event_id: meta.streamId,
        timestamp: '2026-11-21T12:00:00.000Z',
        state: 'failed',
      }),
    ).toBe(false);
    expect(
      validator('client.check')({
        type: 'client.check',
        event_id: meta.streamId,
        timestamp: '2026-11-21T12:00:00.000Z',
        extra: 1,
      }),
    ).toBe(false);
  });
});

function argumentsOf(elements: MessageFormatElement[], out = new Set<string>()): Set<string> {
  for (const e of elements) {
    if ('value' in e && e.type !== TYPE.literal) out.add(String(e.value));
    if (e.type === TYPE.plural || e.type === TYPE.select)
      for (const o of Object.values(e.options)) argumentsOf(o.value, out);
    if (e.type === TYPE.tag) argumentsOf(e.children, out);
  }
  return out;
}

function sourcesOf(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourcesOf(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

describe('the message catalogues', () => {
  it('have the same keys, each well-formed ICU with the same arguments in both languages', () => {
    expect(Object.keys(ru).sort()).toEqual(Object.keys(en).sort());
    for (const key of Object.keys(en) as (keyof typeof en)[]) {
      const english = [...argumentsOf(parse(en[key]))].sort();
      expect([key, [...argumentsOf(parse(ru[key]))].sort()]).toEqual([key, english]);
      expect([key, ru[key] === en[key] && /[a-z]{4}/.test(en[key])]).toEqual([key, key === 'webhook.schema']);
    }
  });

  it('hold every key the pages ask for', () => {
    const used = new Set<string>();
    for (const file of sourcesOf(join(import.meta.dirname, '../web/src'))) {
      for (const match of readFileSync(file, 'utf8').matchAll(/\bt\(\s*'([\w.]+)'/g)) used.add(match[1]!);
    }
    expect(used.size).toBeGreaterThan(200);
    expect([...used].filter((key) => !(key in en))).toEqual([]);
  });
});
