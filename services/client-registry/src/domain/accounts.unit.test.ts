import { describe, expect, it } from 'vitest';
import { effectiveScopes } from '@mds/contracts/api-keys';
import { DomainError } from '@mds/eventsourcing';
import {
  decideAccount,
  decideCreate,
  evolveAccount,
  type AccountCommand,
  type AccountEventCase,
  type AccountState,
  type SealedSecret,
} from './accounts.js';

const companyId = '11111111-1111-4111-8111-111111111111';
const secret = (n: string): SealedSecret => ({
  keyId: 'k1',
  nonce: Buffer.from(`nonce-${n}`).toString('base64'),
  ciphertext: Buffer.from(`sealed-${n}`).toString('base64'),
});

function given(events: AccountEventCase[], start = 0): AccountState {
  return events.reduce<AccountState | undefined>(
    (state, event, i) =>
      evolveAccount(state, companyId, {
        at: new Date(Date.UTC(2026, 10, 21, 10, start + i)).toISOString(),
        event,
      }),
    undefined,
  )!;
}

/** Decide on the state of the past events, and fold the result: the state the command leaves behind. */
function when(past: AccountEventCase[], command: AccountCommand) {
  const before = given(past);
  const events = decideAccount(command, before);
  return { events, after: given([...past, ...events]) };
}

function refusal(past: AccountEventCase[], command: AccountCommand): string {
  try {
    decideAccount(command, given(past));
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
  return 'no refusal';
}

const created = decideCreate({ name: 'Acme' });
const registerTelegram = (botId: string, name: string, makeDefault = false): AccountCommand => ({
  type: 'RegisterBot',
  botId,
  messenger: 'telegram',
  name,
  token: secret(botId),
  providerBotId: `p-${botId}`,
  username: `${name}_bot`,
  makeDefault,
});

describe('a company', () => {
  it('is created with a trimmed name, and not without one', () => {
    expect(created).toEqual([{ $case: 'companyCreated', value: { name: 'Acme' } }]);
    expect(decideCreate({ name: '  Acme  ' })).toEqual(created);
    expect(() => decideCreate({ name: '  ' })).toThrow(DomainError);
  });

  it('cannot be created twice', () => {
    expect(refusal(created, { type: 'CreateCompany', name: 'Acme' })).toBe('COMPANY_EXISTS');
  });
});

describe('API keys', () => {
  const issue: AccountCommand = {
    type: 'IssueApiKey',
    keyId: 'abc',
    keyHash: 'h'.repeat(64),
    keyPrefix: 'mds_abc',
    label: 'backend',
    scopes: ['send', 'change_phone', 'send'],
  };

  it('are issued with their hash only, and revoked once', () => {
    const { events, after } = when(created, issue);
    expect(events).toEqual([
      {
        $case: 'apiKeyIssued',
        value: {
          keyId: 'abc',
          keyHash: 'h'.repeat(64),
          keyPrefix: 'mds_abc',
          label: 'backend',
          scopes: ['send', 'change_phone'],
          rolledFrom: '',
        },
      },
    ]);
    expect(after.apiKeys.abc).toMatchObject({
      keyHash: 'h'.repeat(64),
      label: 'backend',
      scopes: ['send', 'change_phone'],
    });
    const revoked = when([...created, ...events], { type: 'RevokeApiKey', keyId: 'abc' });
    expect(revoked.events).toEqual([{ $case: 'apiKeyRevoked', value: { keyId: 'abc' } }]);
    expect(revoked.after.apiKeys.abc!.revokedAt).toBeDefined();
    expect(
      when([...created, ...events, ...revoked.events], { type: 'RevokeApiKey', keyId: 'abc' }).events,
    ).toEqual([]);
  });

  it('need at least one scope', () => {
    expect(refusal(created, { ...issue, scopes: [] })).toBe('NO_SCOPES');
  });

  it('issued before scopes existed (an event naming none) may do everything but change_phone', () => {
    const { events } = when(created, issue);
    const legacy = [{ ...events[0]!, value: { ...events[0]!.value, scopes: [] } }] as typeof events;
    const scopes = when([...created, ...legacy], { type: 'RevokeApiKey', keyId: 'abc' }).after.apiKeys.abc!
      .scopes;
    expect(effectiveScopes(scopes ?? [])).toEqual(['send', 'check', 'read']);
  });

  it('issued with scopes this build does not know (a newer registry) keep them, and may do nothing here', () => {
    const { events } = when(created, issue);
    const newer = [{ ...events[0]!, value: { ...events[0]!.value, scopes: ['export'] } }] as typeof events;
    const key = given([...created, ...newer]).apiKeys.abc!;
    expect(key.scopes).toEqual(['export']);
    expect(effectiveScopes(key.scopes ?? [])).toEqual([]);
  });

  it('that do not exist cannot be revoked', () => {
    expect(refusal(created, { type: 'RevokeApiKey', keyId: 'nope' })).toBe('API_KEY_NOT_FOUND');
  });
});

describe('bots', () => {
  it('the first of a messenger becomes its default; a second only when asked', () => {
    const first = when(created, registerTelegram('b1', 'shop'));
    expect(first.events.map((e) => e.$case)).toEqual(['botRegistered', 'defaultBotChosen']);
    expect(first.after.defaultBots.telegram).toBe('b1');
    const second = when([...created, ...first.events], registerTelegram('b2', 'news'));
    expect(second.events.map((e) => e.$case)).toEqual(['botRegistered']);
    expect(second.after.defaultBots.telegram).toBe('b1');
    const third = when(
      [...created, ...first.events, ...second.events],
      registerTelegram('b3', 'promo', true),
    );
    expect(third.after.defaultBots.telegram).toBe('b3');
  });

  it('cannot share a name within a messenger', () => {
    const past = [...created, ...decideAccount(registerTelegram('b1', 'shop'), given(created))];
    expect(refusal(past, registerTelegram('b2', 'shop'))).toBe('BOT_NAME_TAKEN');
    expect(refusal(past, { ...registerTelegram('b2', 'shop'), messenger: 'max' } as AccountCommand)).toBe(
      'no refusal',
    );
  });

  it('removing the default leaves the messenger without one', () => {
    const past = [...created, ...decideAccount(registerTelegram('b1', 'shop'), given(created))];
    const { after } = when(past, { type: 'RemoveBot', botId: 'b1' });
    expect(after.bots).toEqual({});
    expect(after.defaultBots.telegram).toBeUndefined();
    expect(refusal(past, { type: 'RemoveBot', botId: 'b9' })).toBe('BOT_NOT_FOUND');
  });

  it('choosing the current default again changes nothing', () => {
    const past = [...created, ...decideAccount(registerTelegram('b1', 'shop'), given(created))];
    expect(when(past, { type: 'ChooseDefaultBot', botId: 'b1' }).events).toEqual([]);
  });
});

/** ep_default, the endpoint the single-URL commands act on. */
const legacy = (state: AccountState) => state.webhookEndpoints.find((e) => e.endpointId === 'ep_default');

describe('the webhook endpoint', () => {
  const configure = (url: string, n = '1'): AccountCommand => ({
    type: 'ConfigureWebhook',
    url,
    newSecret: { secretId: `s${n}`, secret: secret(n) },
  });

  it('gets a signing secret the first time, keeps it when the URL changes', () => {
    const first = when(created, configure('https://a.example/hook'));
    expect(legacy(first.after)).toMatchObject({
      url: 'https://a.example/hook',
      enabled: true,
      secrets: [{ secretId: 's1' }],
    });
    const moved = when([...created, ...first.events], configure('https://b.example/hook', '2'));
    expect(legacy(moved.after)).toMatchObject({
      url: 'https://b.example/hook',
      secrets: [{ secretId: 's1' }],
    });
    expect(when([...created, ...first.events], configure('https://a.example/hook', '3')).events).toEqual([]);
  });

  it('rotation keeps the previous secret until it expires', () => {
    const past = [...created, ...decideAccount(configure('https://a.example/hook'), given(created))];
    const { after } = when(past, {
      type: 'RotateWebhookSecret',
      secretId: 's2',
      secret: secret('2'),
      previousExpiresAt: '2026-11-22T10:00:00.000Z',
    });
    expect(legacy(after)!.secrets.map((s) => [s.secretId, s.expiresAt])).toEqual([
      ['s1', '2026-11-22T10:00:00.000Z'],
      ['s2', undefined],
    ]);
  });

  it('cannot rotate or disable what is not configured; disabling twice is a no-op', () => {
    expect(
      refusal(created, {
        type: 'RotateWebhookSecret',
        secretId: 's',
        secret: secret('x'),
        previousExpiresAt: '2026-11-22T00:00:00Z',
      }),
    ).toBe('WEBHOOK_NOT_CONFIGURED');
    expect(refusal(created, { type: 'DisableWebhook', reason: 'x' })).toBe('WEBHOOK_NOT_CONFIGURED');
    const past = [...created, ...decideAccount(configure('https://a.example/hook'), given(created))];
    const disabled = when(past, { type: 'DisableWebhook', reason: 'failing for 5 days' });
    expect(legacy(disabled.after)).toMatchObject({ enabled: false, disabledReason: 'failing for 5 days' });
    expect(when([...past, ...disabled.events], { type: 'DisableWebhook', reason: 'again' }).events).toEqual(
      [],
    );
    expect(legacy(when([...past, ...disabled.events], { type: 'EnableWebhook' }).after)).toMatchObject({
      enabled: true,
    });
  });
});
