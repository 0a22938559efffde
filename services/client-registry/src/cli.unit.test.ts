import { describe, expect, it } from 'vitest';
import { toCall } from './cli.js';

describe('mds-admin', () => {
  it.each([
    [
      ['companies', 'create', '--name', 'Acme'],
      { method: 'POST', path: '/companies', body: { name: 'Acme' } },
    ],
    [['companies', 'list'], { method: 'GET', path: '/companies' }],
    [
      ['keys', 'issue', 'c1', '--label', 'ci'],
      { method: 'POST', path: '/companies/c1/api-keys', body: { label: 'ci' } },
    ],
    [['keys', 'revoke', 'c1', 'k1'], { method: 'DELETE', path: '/companies/c1/api-keys/k1' }],
    [
      ['webhook', 'set', 'c1', 'https://a.example/h'],
      { method: 'PUT', path: '/companies/c1/webhook', body: { url: 'https://a.example/h' } },
    ],
    [['webhook', 'disable', 'c1'], { method: 'POST', path: '/companies/c1/webhook/disable' }],
    [
      ['bots', 'add', 'c1', '--messenger', 'max', '--name', 'shop', '--token', 't', '--default'],
      {
        method: 'POST',
        path: '/companies/c1/bots',
        body: { messenger: 'max', name: 'shop', token: 't', default: true },
      },
    ],
    [['clients', 'show', 'c1', '79123456789'], { method: 'GET', path: '/companies/c1/clients/79123456789' }],
    [
      ['clients', 'forget', 'c1', '79123456789'],
      { method: 'POST', path: '/companies/c1/clients/79123456789/forget' },
    ],
    [
      ['members', 'add', 'c1', '--email', 'boss@acme.test'],
      {
        method: 'POST',
        path: '/companies/c1/members',
        body: { email: 'boss@acme.test', role: 'owner' },
        target: 'dashboard',
      },
    ],
    [
      ['members', 'add', 'c1', '--email', 'dev@acme.test', '--role', 'developer', '--name', 'Dev'],
      {
        method: 'POST',
        path: '/companies/c1/members',
        body: { email: 'dev@acme.test', role: 'developer', name: 'Dev' },
        target: 'dashboard',
      },
    ],
    [['members', 'list', 'c1'], { method: 'GET', path: '/companies/c1/members', target: 'dashboard' }],
    [
      ['members', 'reset', 'c1', '--email', 'boss@acme.test'],
      {
        method: 'POST',
        path: '/companies/c1/members/reset',
        body: { email: 'boss@acme.test' },
        target: 'dashboard',
      },
    ],
  ])('%j calls the admin API', (argv, call) => {
    expect(toCall(argv)).toEqual(call);
  });

  it('explains what is missing, and prints usage for an unknown command', () => {
    expect(() => toCall(['companies', 'create'])).toThrow(/missing --name/);
    expect(() => toCall(['bots', 'add', 'c1', '--messenger', 'max'])).toThrow(/missing --name/);
    expect(() => toCall(['teleport'])).toThrow(/usage: mds-admin/);
    expect(() => toCall(['members', 'add', 'c1'])).toThrow(/missing --email/);
  });
});
