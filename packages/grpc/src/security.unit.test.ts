import { describe, expect, it } from 'vitest';
import { CallerAuthorizer, parseCallerList, tokenHash } from './security.js';
import { grpc } from './index.js';

const known = ['gateway', 'telegram-sender'];
const h1 = tokenHash('one-token-0123456789');
const h2 = tokenHash('two-token-0123456789');

describe('parseCallerList', () => {
  it('reads "<caller>:<sha256>" entries separated by commas or lines, with comments', () => {
    expect(parseCallerList(`gateway:${h1}, telegram-sender:${h2}`, known)).toEqual([
      { caller: 'gateway', tokenSha256: h1 },
      { caller: 'telegram-sender', tokenSha256: h2 },
    ]);
    expect(
      parseCallerList(`# rotation of 2026-11\ngateway:${h1}\ngateway:${h2.toUpperCase()}\n`, known),
    ).toEqual([
      { caller: 'gateway', tokenSha256: h1 },
      { caller: 'gateway', tokenSha256: h2 },
    ]);
  });

  it('refuses malformed entries, unknown callers, a token shared by two callers and an empty list', () => {
    expect(() => parseCallerList('gateway:plaintext-token', known)).toThrow(/not "<caller>:<sha256 hex/);
    expect(() => parseCallerList(`dashboard:${h1}`, known)).toThrow(/unknown caller "dashboard"/);
    expect(() => parseCallerList(`gateway:${h1},telegram-sender:${h1}`, known)).toThrow(/share a token/);
    expect(() => parseCallerList(' , # nothing', known)).toThrow(/empty/);
  });
});

describe('CallerAuthorizer', () => {
  const authorizer = new CallerAuthorizer({ gateway: ['resolveApiKey'] }, [
    { caller: 'gateway', tokenSha256: h1 },
    { caller: 'telegram-sender', tokenSha256: h2 },
  ]);
  it('knows callers by token and checks the method', () => {
    expect(authorizer.check('one-token-0123456789', 'resolveApiKey', 'S/ResolveApiKey')).toEqual({
      ok: true,
      caller: 'gateway',
    });
    expect(authorizer.check('one-token-0123456789', 'listBots', 'S/ListBots')).toMatchObject({
      ok: false,
      code: grpc.status.PERMISSION_DENIED,
    });
    // A caller without an entry in the permissions may call nothing.
    expect(authorizer.check('two-token-0123456789', 'resolveApiKey', 'S/ResolveApiKey')).toMatchObject({
      ok: false,
      code: grpc.status.PERMISSION_DENIED,
    });
    for (const token of [undefined, '', 'one-token-012345678']) {
      expect(authorizer.check(token, 'resolveApiKey', 'S/ResolveApiKey')).toMatchObject({
        ok: false,
        code: grpc.status.UNAUTHENTICATED,
      });
    }
  });
});
