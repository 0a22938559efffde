import { describe, expect, it } from 'vitest';
import { deciderSpec, handle } from '@mds/eventsourcing';
import { accountDecider, type DatedAccountEvent, type SealedSecret } from './accounts.js';

// Given-when-then over the account's decider (@mds/eventsourcing): past events in, new events out.
const companyId = '22222222-2222-4222-8222-222222222222';
const decider = accountDecider(companyId);
const spec = deciderSpec(decider, expect);
const at = (minute: number) => new Date(Date.UTC(2026, 10, 24, 10, minute)).toISOString();
const secret = (n: string): SealedSecret => ({
  keyId: 'k1',
  nonce: Buffer.from(`nonce-${n}`).toString('base64'),
  ciphertext: Buffer.from(`sealed-${n}`).toString('base64'),
});

const created: DatedAccountEvent = { at: at(0), event: { $case: 'companyCreated', value: { name: 'Acme' } } };
const keyIssued: DatedAccountEvent = {
  at: at(1),
  event: {
    $case: 'apiKeyIssued',
    value: {
      keyId: 'k',
      keyHash: 'h'.repeat(64),
      keyPrefix: 'mds_k',
      label: 'backend',
      scopes: ['send'],
      rolledFrom: '',
    },
  },
};
const configure = (url: string, secretId: string, minute: number) =>
  ({
    type: 'ConfigureWebhook',
    url,
    newSecret: { secretId, secret: secret(secretId) },
    at: at(minute),
  }) as const;
// Made by the decider itself: the sealed secret's wire form is the domain's business.
const [webhookConfigured] = handle(decider, [created], configure('https://a.example/hook', 's1', 2)).events;

const roll = (minute: number, expiresAt?: string) =>
  ({
    type: 'RollApiKey',
    keyId: 'k',
    newKeyId: 'n',
    keyHash: 'g'.repeat(64),
    keyPrefix: 'mds_n',
    now: at(minute),
    ...(expiresAt ? { expiresAt } : {}),
    at: at(minute),
  }) as const;
const rolledIssued = (minute: number): DatedAccountEvent => ({
  at: at(minute),
  event: {
    $case: 'apiKeyIssued',
    value: {
      keyId: 'n',
      keyHash: 'g'.repeat(64),
      keyPrefix: 'mds_n',
      label: 'backend',
      scopes: ['send'],
      rolledFrom: 'k',
    },
  },
});

describe('rolling an API key', () => {
  it('issues a key with the same label and scopes, and keeps the old one until the end of its overlap', () => {
    spec
      .given([created, keyIssued])
      .when(roll(5, at(50)))
      .then([
        rolledIssued(5),
        {
          at: at(5),
          event: { $case: 'apiKeyExpiryScheduled', value: { keyId: 'k', expiresAt: new Date(at(50)) } },
        },
      ]);
  });

  it('ends the old key at once with no overlap (revoked)', () => {
    spec
      .given([created, keyIssued])
      .when(roll(5))
      .then([rolledIssued(5), { at: at(5), event: { $case: 'apiKeyRevoked', value: { keyId: 'k' } } }]);
  });

  it('keeps an earlier end of a key rolled twice, and refuses to roll a key that has ended', () => {
    const scheduled: DatedAccountEvent = {
      at: at(5),
      event: { $case: 'apiKeyExpiryScheduled', value: { keyId: 'k', expiresAt: new Date(at(20)) } },
    };
    const [, second] = handle(decider, [created, keyIssued, scheduled], roll(6, at(50))).events;
    expect(second?.event).toEqual({
      $case: 'apiKeyExpiryScheduled',
      value: { keyId: 'k', expiresAt: new Date(at(20)) },
    });
    spec
      .given([created, keyIssued, scheduled])
      .when(roll(20, at(50)))
      .thenFails('API_KEY_ENDED');
    const revoked: DatedAccountEvent = {
      at: at(3),
      event: { $case: 'apiKeyRevoked', value: { keyId: 'k' } },
    };
    spec
      .given([created, keyIssued, revoked])
      .when(roll(4, at(50)))
      .thenFails('API_KEY_ENDED');
    spec
      .given([created])
      .when(roll(4, at(50)))
      .thenFails('API_KEY_NOT_FOUND');
  });

  it('folds the end and the key it was rolled from into the keys', () => {
    const { state: after } = handle(decider, [created, keyIssued], roll(5, at(50)));
    expect(after?.apiKeys.k).toMatchObject({ expiresAt: at(50) });
    expect(after?.apiKeys.n).toMatchObject({ rolledFrom: 'k', label: 'backend', scopes: ['send'] });
  });
});

describe('the account decider', () => {
  it('creates a company that does not exist yet, at the time of the command', () => {
    spec
      .given([])
      .when({ type: 'CreateCompany', name: ' Acme ', at: at(0) })
      .then([created]);
  });

  it('refuses a command about a company that does not exist', () => {
    spec
      .given([])
      .when({ type: 'RevokeApiKey', keyId: 'k', at: at(1) })
      .thenFails('COMPANY_NOT_FOUND');
  });

  it('refuses to create a company twice', () => {
    spec
      .given([created])
      .when({ type: 'CreateCompany', name: 'Acme', at: at(1) })
      .thenFails('COMPANY_EXISTS');
  });

  it('revokes a key once; revoking it again changes nothing', () => {
    const revoked: DatedAccountEvent = {
      at: at(2),
      event: { $case: 'apiKeyRevoked', value: { keyId: 'k' } },
    };
    spec
      .given([created, keyIssued])
      .when({ type: 'RevokeApiKey', keyId: 'k', at: at(2) })
      .then([revoked]);
    spec
      .given([created, keyIssued, revoked])
      .when({ type: 'RevokeApiKey', keyId: 'k', at: at(3) })
      .thenNothingHappened();
  });

  it('keeps the time of each event in the state it folds to', () => {
    spec
      .given([created])
      .when({
        type: 'IssueApiKey',
        keyId: 'k',
        keyHash: 'h'.repeat(64),
        keyPrefix: 'mds_k',
        label: 'backend',
        scopes: ['send'],
        at: at(1),
      })
      .thenState((state) => {
        expect(state?.createdAt).toBe(at(0));
        expect(state?.apiKeys.k).toMatchObject({ issuedAt: at(1), label: 'backend' });
      });
  });

  it('configuring the same endpoint again is a no-op; disabling one that is not there is refused', () => {
    spec
      .given([created, webhookConfigured!])
      .when(configure('https://a.example/hook', 's2', 3))
      .thenNothingHappened();
    spec
      .given([created, webhookConfigured!])
      .when(configure('https://b.example/hook', 's2', 3))
      .thenState((state) => {
        expect(state?.webhookEndpoints).toMatchObject([
          { endpointId: 'ep_default', url: 'https://b.example/hook', enabled: true },
        ]);
        expect(state?.webhookEndpoints[0]?.secrets.map((s) => s.secretId)).toEqual(['s1']);
      });
    spec
      .given([created])
      .when({ type: 'DisableWebhook', reason: 'gone', at: at(3) })
      .thenFails('WEBHOOK_NOT_CONFIGURED');
  });
});
