import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { operationsOf, redoclyLint, routesOf } from '@mds/service-kit/testing/openapi';
import { openApiDocument } from './openapi.js';
import { apiRouter, type ApiDeps } from './routes.js';
import { buttonSchema, sendRequestSchema } from './schemas.js';

// Only what building the router touches: no request is made.
const routerDeps = { registry: new Registry(), limits: {}, apiKeys: {}, logger: {} } as unknown as ApiDeps;

type Operation = {
  operationId?: string;
  tags?: string[];
  requestBody?: { content: Record<string, { examples?: object; schema: unknown }> };
  responses: Record<string, { content?: Record<string, { examples?: object }> }>;
  'x-codeSamples'?: unknown[];
};
const doc = openApiDocument() as {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, { post: Operation }>;
  components: { schemas: Record<string, Record<string, unknown>> };
};
const operations = operationsOf(doc).map((name) => {
  const [method, path] = name.split(' ') as [string, string];
  return [name, doc.paths[path]![method.toLowerCase()]!] as const;
});

describe('the OpenAPI document', () => {
  it('is the one @mds/client is generated from (else: npm run openapi -w @mds/gateway, then commit it)', () => {
    const copy = readFileSync(
      fileURLToPath(new URL('../../../../packages/client/openapi.json', import.meta.url)),
      'utf8',
    );
    expect(copy).toBe(`${JSON.stringify(openApiDocument(), null, 2)}\n`);
  });

  it('passes Redocly CLI lint (the recommended rules and ours in redocly.yaml), offline, with no warning', () => {
    const lint = redoclyLint(
      openApiDocument(),
      fileURLToPath(new URL('../../redocly.yaml', import.meta.url)),
    );
    expect(lint.status, lint.output).toBe(0);
    // Warnings are failures too: the document is the contract.
    expect(lint.output).not.toMatch(/warning/i);
  }, 60_000);

  it('has an operation for every route of the API router', () => {
    expect(operations.map(([name]) => name).sort()).toEqual(
      [...new Set(routesOf(apiRouter(routerDeps)).map((r) => `${r.split(' ')[0]} /api/v1${r.split(' ')[1]}`))]
        .filter((r) => !r.startsWith('_'))
        .sort(),
    );
  });

  it.each(operations)(
    '%s has an operationId, a tag, request and response examples and code samples',
    (_, op) => {
      expect(op.operationId).toMatch(/^[a-z][A-Za-z]+$/);
      expect(op.tags).toHaveLength(1);
      if (op.requestBody)
        expect(Object.keys(op.requestBody.content['application/json']!.examples ?? {})).not.toHaveLength(0);
      for (const [status, response] of Object.entries(op.responses)) {
        for (const media of Object.values(response.content ?? {}))
          expect(Object.keys(media.examples ?? {}), `${status} has an example`).not.toHaveLength(0);
      }
      expect(op['x-codeSamples']).toHaveLength(2);
    },
  );

  it('has the three webhooks with their Standard Webhooks headers, typed by the schemas the dispatcher builds with', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([
      'client.check',
      'client.phone_changed',
      'message.status',
    ]);
    for (const [name, { post }] of Object.entries(doc.webhooks)) {
      const headers = (post as unknown as { parameters: { in: string; name: string; required: boolean }[] })
        .parameters;
      expect(headers.map((h) => [h.in, h.name, h.required])).toEqual([
        ['header', 'webhook-id', true],
        ['header', 'webhook-timestamp', true],
        ['header', 'webhook-signature', true],
      ]);
      expect(post.tags).toEqual(['Webhooks']);
      const schema = post.requestBody!.content['application/json']!.schema as { $ref: string };
      const id = schema.$ref.split('/').pop()!;
      expect(JSON.stringify(doc.components.schemas[id])).toContain(`"const":"${name}"`);
    }
  });

  it('states every rule the gateway enforces on a send', () => {
    const send = doc.components.schemas.SendRequest as {
      oneOf: { properties: Record<string, Record<string, unknown>>; additionalProperties: boolean }[];
    };
    const limits = Object.fromEntries(
      send.oneOf.map((v) => [v.properties.service!.const, v.properties.text!.maxLength]),
    );
    expect(limits).toEqual({ telegram: 4096, max: 4000 });
    const [telegram] = send.oneOf;
    expect(telegram!.additionalProperties).toBe(false);
    expect(telegram!.properties.phone_number).toMatchObject({ pattern: '^\\+?[0-9]{11}$', format: 'phone' });
    expect(telegram!.properties.buttons).toMatchObject({ maxItems: 10 });
    expect(doc.components.schemas.LinkButton).toMatchObject({
      additionalProperties: false,
      properties: { text: { minLength: 1, maxLength: 64 }, url: { maxLength: 2048 } },
    });
  });
});

describe("the document's text patterns", () => {
  const send = doc.components.schemas.SendRequest as {
    oneOf: { properties: Record<string, { pattern: string }> }[];
  };
  const textPattern = new RegExp(send.oneOf[0]!.properties.text!.pattern, 'u');
  const buttonPattern = new RegExp(
    (doc.components.schemas.LinkButton as { properties: Record<string, { pattern: string }> }).properties
      .text!.pattern,
    'u',
  );
  // Pieces that each rule turns on: what shows, what shows nothing, and what no text may hold.
  const pieces = [
    'a',
    'я',
    '😀',
    '\u{1F3FE}',
    '\ufffd',
    ' ',
    '\t',
    '\n',
    '\r',
    '\u00a0',
    '\u200b',
    '\u202e',
    '\ufeff',
    '\u3164',
    '\u0000',
    '\u0007',
    '\u001b',
    '\u007f',
    '\u0085',
    '\ud800',
    '\udc00',
    '\ufdd0',
    '\ufffe',
    '\uffff',
    '\u{1fffe}',
    '\u{10ffff}',
  ];
  const texts = fc.array(fc.constantFrom(...pieces), { maxLength: 12 }).map((p) => p.join(''));
  const sendText = (text: string) =>
    sendRequestSchema.safeParse({ phone_number: '79123456789', service: 'telegram', text }).success;

  it('match exactly the texts the gateway takes (ajv and Python read them by code points, as here)', () => {
    fc.assert(
      // Lone surrogates are refused in words only: Rust's and Go's regex engines cannot name them.
      fc.property(
        texts.filter((text) => text.isWellFormed()),
        (text) => {
          expect(textPattern.test(text), JSON.stringify(text)).toBe(sendText(text));
          expect(buttonPattern.test(text), JSON.stringify(text)).toBe(
            buttonSchema.safeParse({ text, url: 'https://e.x/' }).success || text.trim().length > 64,
          );
        },
      ),
      { numRuns: 3_000 },
    );
  });
});
