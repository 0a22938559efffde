import { describe, expect, it } from 'vitest';
import { deciderSpec, handle } from '@mds/eventsourcing';
import {
  AccountEvent,
  LEGACY_WEBHOOK_ENDPOINT_ID,
  MAX_WEBHOOK_ENDPOINTS,
  newWebhookEndpointId,
  type EncryptedSecret,
} from '@mds/contracts';
import {
  accountDecider,
  type AccountState,
  type DatedAccountCommand,
  type DatedAccountEvent,
  type SealedSecret,
} from './accounts.js';
import { upgradeLegacyWebhook, type LegacyWebhook } from './legacy-webhook.js';

// Given-when-then over the account's decider: a company's webhook endpoints (0 to 10), each with its settings,
// secrets and enabled state; the events written before endpoints (no endpoint id) are about ep_default.
const companyId = '33333333-3333-4333-8333-333333333333';
const decider = accountDecider(companyId);
const spec = deciderSpec(decider, expect);
const at = (minute: number) => new Date(Date.UTC(2026, 10, 29, 10, minute)).toISOString();
const secret = (n: string): SealedSecret => ({
  keyId: 'k1',
  nonce: Buffer.from(`nonce-${n}`).toString('base64'),
  ciphertext: Buffer.from(`sealed-${n}`).toString('base64'),
  format: 1,
});
const wire = (n: string): EncryptedSecret => ({
  keyId: 'k1',
  nonce: Buffer.from(`nonce-${n}`),
  ciphertext: Buffer.from(`sealed-${n}`),
  format: 0,
});

/** A secret sealed before owners were bound (format 0, absent in the document). */
const sealedBeforeOwners = (n: string): SealedSecret => {
  const { format: _bound, ...rest } = secret(n);
  return rest;
};

const created: DatedAccountEvent = { at: at(0), event: { $case: 'companyCreated', value: { name: 'Acme' } } };
const A = 'ep_AAAAAAAAAAAAAAAAAAAAAA';
const B = 'ep_BBBBBBBBBBBBBBBBBBBBBB';

const add = (endpointId: string, minute: number, more: Partial<DatedAccountCommand> = {}) =>
  ({
    type: 'AddWebhookEndpoint',
    endpointId,
    settings: { url: `https://${endpointId.toLowerCase()}.example/hook`, description: '', eventTypes: [] },
    newSecret: { secretId: `s-${endpointId}`, secret: secret(endpointId) },
    enabled: true,
    at: at(minute),
    ...more,
  }) as DatedAccountCommand;

/** The events the decider makes for these commands, one after the other, after `past`. */
function history(past: DatedAccountEvent[], ...commands: DatedAccountCommand[]): DatedAccountEvent[] {
  return commands.reduce((events, command) => [...events, ...handle(decider, events, command).events], past);
}
const endpointsOf = (state: AccountState | undefined) => state?.webhookEndpoints ?? [];
const twoEndpoints = history([created], add(A, 1), add(B, 2));

describe('webhook endpoints', () => {
  it('adds endpoints with their settings, each with a secret of its own', () => {
    spec
      .given([created])
      .when(
        add(A, 1, {
          settings: {
            url: 'https://a.example/hook',
            description: 'production',
            eventTypes: ['message.status', 'client.check', 'message.status'],
            rateLimitPerSecond: 50,
          },
        }),
      )
      .then([
        {
          at: at(1),
          event: {
            $case: 'webhookEndpointConfigured',
            value: {
              endpointId: A,
              url: 'https://a.example/hook',
              description: 'production',
              eventTypes: ['message.status', 'client.check'],
              rateLimitPerSecond: 50,
              secretId: `s-${A}`,
              secret: { ...wire(A), format: 1 },
            },
          },
        },
      ]);
    spec
      .given(twoEndpoints)
      .when({ type: 'EnableWebhook', endpointId: A, at: at(3) })
      .thenState((state) => {
        expect(endpointsOf(state).map((e) => [e.endpointId, e.secrets.map((s) => s.secretId)])).toEqual([
          [A, [`s-${A}`]],
          [B, [`s-${B}`]],
        ]);
      });
  });

  it(`holds at most ${MAX_WEBHOOK_ENDPOINTS}: the next, and a legacy URL beyond them, are refused`, () => {
    const ids = Array.from({ length: MAX_WEBHOOK_ENDPOINTS }, () => newWebhookEndpointId());
    const full = history([created], ...ids.map((id, i) => add(id, i + 1)));
    expect(endpointsOf(full.reduce<AccountState | undefined>(decider.evolve, undefined))).toHaveLength(
      MAX_WEBHOOK_ENDPOINTS,
    );
    spec.given(full).when(add(newWebhookEndpointId(), 30)).thenFails('WEBHOOK_ENDPOINT_LIMIT');
    spec
      .given(full)
      .when({
        type: 'ConfigureWebhook',
        url: 'https://legacy.example/hook',
        newSecret: { secretId: 's-legacy', secret: secret('legacy') },
        at: at(30),
      })
      .thenFails('WEBHOOK_ENDPOINT_LIMIT');
    // One removed, one fits again.
    const removed = history(full, { type: 'RemoveWebhookEndpoint', endpointId: ids[3]!, at: at(31) });
    spec
      .given(removed)
      .when(add(A, 32))
      .thenState((state) => expect(endpointsOf(state)).toHaveLength(MAX_WEBHOOK_ENDPOINTS));
  });

  it('refuses an unknown event type, a URL with a password, a long description, a rate limit out of range', () => {
    const settings = { url: 'https://a.example/hook', description: '', eventTypes: [] as string[] };
    const refused = (change: Partial<typeof settings & { rateLimitPerSecond: number }>, code: string) =>
      spec
        .given([created])
        .when(add(A, 1, { settings: { ...settings, ...change } }))
        .thenFails(code);
    refused({ eventTypes: ['message.status', 'message.sent'] }, 'UNKNOWN_WEBHOOK_EVENT_TYPE');
    refused({ url: 'https://user:pw@a.example/hook' }, 'INVALID_WEBHOOK_URL');
    refused({ url: 'ftp://a.example/hook' }, 'INVALID_WEBHOOK_URL');
    refused({ description: 'x'.repeat(201) }, 'INVALID_DESCRIPTION');
    refused({ rateLimitPerSecond: 0 }, 'INVALID_RATE_LIMIT');
    refused({ rateLimitPerSecond: 1001 }, 'INVALID_RATE_LIMIT');
    spec
      .given(twoEndpoints)
      .when({ type: 'ChangeWebhookEndpoint', endpointId: A, changes: { eventTypes: ['nope'] }, at: at(3) })
      .thenFails('UNKNOWN_WEBHOOK_EVENT_TYPE');
  });

  it('changes settings keeping the secret; the same settings again change nothing; a null rate limit clears it', () => {
    const changed = history(twoEndpoints, {
      type: 'ChangeWebhookEndpoint',
      endpointId: A,
      changes: { url: 'https://a2.example/hook', eventTypes: ['client.check'], rateLimitPerSecond: 5 },
      at: at(3),
    });
    spec
      .given(changed)
      .when({
        type: 'ChangeWebhookEndpoint',
        endpointId: A,
        changes: { url: 'https://a2.example/hook', eventTypes: ['client.check'] },
        at: at(4),
      })
      .thenNothingHappened();
    spec
      .given(changed)
      .when({
        type: 'ChangeWebhookEndpoint',
        endpointId: A,
        changes: { rateLimitPerSecond: undefined },
        at: at(4),
      })
      .thenState((state) => {
        const a = endpointsOf(state)[0]!;
        expect(a).toMatchObject({ url: 'https://a2.example/hook', eventTypes: ['client.check'] });
        expect(a.rateLimitPerSecond).toBeUndefined();
        expect(a.secrets.map((s) => s.secretId)).toEqual([`s-${A}`]);
      });
    spec
      .given(twoEndpoints)
      .when({
        type: 'ChangeWebhookEndpoint',
        endpointId: 'ep_CCCCCCCCCCCCCCCCCCCCCC',
        changes: {},
        at: at(3),
      })
      .thenFails('WEBHOOK_ENDPOINT_NOT_FOUND');
  });

  it('removes one endpoint with its secrets; the other stays; removing it again is refused', () => {
    const remove = { type: 'RemoveWebhookEndpoint', endpointId: A, at: at(3) } as const;
    spec
      .given(twoEndpoints)
      .when(remove)
      .then([{ at: at(3), event: { $case: 'webhookEndpointRemoved', value: { endpointId: A } } }]);
    spec
      .given(twoEndpoints)
      .when(remove)
      .thenState((state) => expect(endpointsOf(state).map((e) => e.endpointId)).toEqual([B]));
    spec.given(history(twoEndpoints, remove)).when(remove).thenFails('WEBHOOK_ENDPOINT_NOT_FOUND');
  });

  it("rotates one endpoint's secret: the previous one signs until it expires, the other endpoint's are untouched", () => {
    const rotate = {
      type: 'RotateWebhookSecret',
      endpointId: B,
      secretId: 's-B2',
      secret: secret('B2'),
      previousExpiresAt: at(50),
      at: at(3),
    } as const;
    spec
      .given(twoEndpoints)
      .when(rotate)
      .then([
        {
          at: at(3),
          event: {
            $case: 'webhookSecretRotated',
            value: {
              endpointId: B,
              secretId: 's-B2',
              secret: { ...wire('B2'), format: 1 },
              previousSecretId: `s-${B}`,
              previousSecretExpiresAt: new Date(at(50)),
            },
          },
        },
      ]);
    spec
      .given(twoEndpoints)
      .when(rotate)
      .thenState((state) => {
        const [a, b] = endpointsOf(state);
        expect(a!.secrets).toEqual([{ secretId: `s-${A}`, secret: secret(A), createdAt: at(1) }]);
        expect(b!.secrets.map((s) => [s.secretId, s.expiresAt])).toEqual([
          [`s-${B}`, at(50)],
          ['s-B2', undefined],
        ]);
      });
  });

  it('disables one endpoint (by hand or automatically) and leaves the others on; enabling clears the reason', () => {
    const disable = {
      type: 'DisableWebhook',
      endpointId: A,
      reason: 'HTTP 500 for 5 days',
      automatic: true,
      at: at(3),
    } as const;
    spec
      .given(twoEndpoints)
      .when(disable)
      .then([
        {
          at: at(3),
          event: {
            $case: 'webhookEndpointDisabled',
            value: { endpointId: A, reason: 'HTTP 500 for 5 days', automatic: true },
          },
        },
      ]);
    const disabled = history(twoEndpoints, disable);
    spec
      .given(disabled)
      .when({ ...disable, reason: 'again', automatic: false })
      .thenNothingHappened();
    spec
      .given(disabled)
      .when({ type: 'DisableWebhook', endpointId: B, reason: 'paused', at: at(4) })
      .thenState((state) => {
        expect(endpointsOf(state)).toMatchObject([
          {
            endpointId: A,
            enabled: false,
            disabledReason: 'HTTP 500 for 5 days',
            disabledAutomatically: true,
          },
          { endpointId: B, enabled: false, disabledReason: 'paused' },
        ]);
        expect(endpointsOf(state)[1]!.disabledAutomatically).toBeUndefined();
      });
    spec
      .given(disabled)
      .when({ type: 'EnableWebhook', endpointId: A, at: at(4) })
      .thenState((state) => {
        expect(endpointsOf(state)[0]).toMatchObject({ endpointId: A, enabled: true });
        expect(endpointsOf(state)[0]).not.toHaveProperty('disabledReason');
        expect(endpointsOf(state)[0]).not.toHaveProperty('disabledAutomatically');
        expect(endpointsOf(state)[1]).toMatchObject({ endpointId: B, enabled: true });
      });
    spec
      .given([created])
      .when(add(A, 1, { enabled: false }))
      .thenState((state) =>
        expect(endpointsOf(state)[0]).toMatchObject({ enabled: false, disabledReason: 'added disabled' }),
      );
  });

  it('reseals the secrets of every endpoint, by secret id', () => {
    const rotated = history(twoEndpoints, {
      type: 'RotateWebhookSecret',
      endpointId: A,
      secretId: 's-A2',
      secret: secret('A2'),
      previousExpiresAt: at(50),
      at: at(3),
    });
    const renewed = secret('renewed');
    spec
      .given(rotated)
      .when({
        type: 'ResealSecrets',
        botTokens: {},
        webhookSecrets: { [`s-${A}`]: renewed, 's-A2': renewed, [`s-${B}`]: renewed, 's-gone': renewed },
        at: at(4),
      })
      .thenState((state) => {
        const all = endpointsOf(state).flatMap((e) => e.secrets.map((s) => [s.secretId, s.secret]));
        expect(all).toEqual([
          [`s-${A}`, renewed],
          ['s-A2', renewed],
          [`s-${B}`, renewed],
        ]);
      });
  });
});

describe('events written before endpoints (no endpoint id)', () => {
  // As the single-URL registry wrote them: fields it did not know are absent on the wire.
  const legacyEvent = (minute: number, event: unknown): DatedAccountEvent => ({
    at: at(minute),
    event: AccountEvent.decode(
      AccountEvent.encode(
        AccountEvent.fromPartial({ metadata: {}, event: event as AccountEvent['event'] }),
      ).finish(),
    ).event!,
  });
  const legacy = [
    created,
    legacyEvent(1, {
      $case: 'webhookEndpointConfigured',
      value: { url: 'https://old.example/hook', secretId: 's1', secret: wire('1') },
    }),
    legacyEvent(2, {
      $case: 'webhookSecretRotated',
      value: {
        secretId: 's2',
        secret: wire('2'),
        previousSecretId: 's1',
        previousSecretExpiresAt: new Date(at(60)),
      },
    }),
    legacyEvent(3, { $case: 'webhookEndpointDisabled', value: { reason: 'HTTP 410 Gone' } }),
  ];

  it('fold to the endpoint ep_default, with its URL, secrets and state', () => {
    const state = legacy.reduce<AccountState | undefined>(decider.evolve, undefined);
    expect(endpointsOf(state)).toEqual([
      {
        endpointId: LEGACY_WEBHOOK_ENDPOINT_ID,
        url: 'https://old.example/hook',
        description: '',
        eventTypes: [],
        enabled: false,
        disabledReason: 'HTTP 410 Gone',
        secrets: [
          { secretId: 's1', secret: sealedBeforeOwners('1'), createdAt: at(1), expiresAt: at(60) },
          { secretId: 's2', secret: sealedBeforeOwners('2'), createdAt: at(2) },
        ],
      },
    ]);
  });

  it('the single-URL commands act on ep_default; new endpoints come after it', () => {
    const more = history(legacy, { type: 'EnableWebhook', at: at(4) }, add(A, 5), {
      type: 'ConfigureWebhook',
      url: 'https://new.example/hook',
      newSecret: { secretId: 'x', secret: secret('x') },
      at: at(6),
    });
    const state = more.reduce<AccountState | undefined>(decider.evolve, undefined);
    expect(
      endpointsOf(state).map((e) => [e.endpointId, e.url, e.enabled, e.secrets.at(-1)!.secretId]),
    ).toEqual([
      [LEGACY_WEBHOOK_ENDPOINT_ID, 'https://new.example/hook', true, 's2'],
      [A, `https://${A.toLowerCase()}.example/hook`, true, `s-${A}`],
    ]);
    // Removed, the single-URL API finds no endpoint; set again, ep_default comes back first with a new secret.
    const removed = history(more, {
      type: 'RemoveWebhookEndpoint',
      endpointId: LEGACY_WEBHOOK_ENDPOINT_ID,
      at: at(7),
    });
    spec
      .given(removed)
      .when({ type: 'DisableWebhook', reason: 'x', at: at(8) })
      .thenFails('WEBHOOK_NOT_CONFIGURED');
    spec
      .given(removed)
      .when({
        type: 'ConfigureWebhook',
        url: 'https://back.example/hook',
        newSecret: { secretId: 'y', secret: secret('y') },
        at: at(8),
      })
      .thenState((s) =>
        expect(endpointsOf(s).map((e) => [e.endpointId, e.secrets.map((x) => x.secretId)])).toEqual([
          [LEGACY_WEBHOOK_ENDPOINT_ID, ['y']],
          [A, [`s-${A}`]],
        ]),
      );
  });

  it('a document stored before endpoints upgrades to exactly what folding its events gives', () => {
    const folded = legacy.reduce<AccountState | undefined>(decider.evolve, undefined)!;
    // The document as the single-URL registry stored it for the same events.
    const { webhookEndpoints: _none, ...rest } = folded;
    const [e] = folded.webhookEndpoints;
    const webhook: LegacyWebhook = {
      url: e!.url,
      enabled: e!.enabled,
      disabledReason: e!.disabledReason!,
      secrets: e!.secrets,
    };
    const stored = JSON.parse(JSON.stringify({ ...rest, webhook })) as AccountState & {
      webhook: LegacyWebhook;
    };
    expect(JSON.parse(JSON.stringify(upgradeLegacyWebhook(stored)))).toEqual(
      JSON.parse(JSON.stringify(folded)),
    );
    // A document with no webhook gets no endpoint; an upgraded one is left as it is.
    expect(upgradeLegacyWebhook({ ...rest } as AccountState).webhookEndpoints).toEqual([]);
    expect(upgradeLegacyWebhook(folded)).toEqual(folded);
  });
});
