import { describe, expect, it } from 'vitest';
import {
  allTopics,
  apiBaseSetting,
  deliveryTopic,
  Messenger,
  messengerCode,
  messengerNameOf,
  messengerNames,
  messengers,
  registerMessenger,
} from './index.js';
import { fakeMessenger } from './test-support/messengers.js';

describe('the messenger vocabulary', () => {
  it('names every code and codes every name, both ways', () => {
    const codes = { telegram: Messenger.MESSENGER_TELEGRAM, max: Messenger.MESSENGER_MAX };
    for (const [name, code] of Object.entries(codes)) {
      expect(messengerCode(name)).toBe(code);
      expect(messengerNameOf(code)).toBe(name);
    }
  });

  it('names no messenger for the unspecified, unrecognized or an unknown code', () => {
    expect(messengerNameOf(Messenger.MESSENGER_UNSPECIFIED)).toBeUndefined();
    expect(messengerNameOf(Messenger.UNRECOGNIZED)).toBeUndefined();
    expect(messengerNameOf(3)).toBeUndefined();
  });
});

describe('the messenger catalogue', () => {
  it('gives every built-in messenger its own code, delivery topic and sender', () => {
    const all = messengers();
    for (const key of ['name', 'code', 'deliveryTopic', 'sender'] as const)
      expect(new Set(all.map((m) => m[key])).size).toBe(all.length);
    expect(allTopics().map((t) => t.name)).toEqual(expect.arrayContaining(all.map((m) => m.deliveryTopic)));
    expect(deliveryTopic('max').readers).toEqual(['max-sender', 'dashboard']);
  });

  it("names client-registry's setting of each one's API base URL: its own, else <NAME>_API_BASE", () => {
    expect(messengers().map(apiBaseSetting)).toEqual(['TELEGRAM_API_ROOT', 'MAX_API_BASE']);
  });

  it('takes a registered messenger everywhere a name or code is looked up, and refuses one that clashes', () => {
    const fake = fakeMessenger('pigeon', 90);
    expect(() => registerMessenger({ ...fake, name: 'telegram' })).toThrow(/clashes with telegram/);
    expect(() => registerMessenger({ ...fake, code: Messenger.MESSENGER_MAX })).toThrow(/clashes with max/);
    expect(() => registerMessenger({ ...fake, name: 'Pigeon Post' })).toThrow(/lower-case/);
    registerMessenger(fake);
    expect(messengerNames()).toEqual(['telegram', 'max', 'pigeon']);
    expect(messengerNameOf(90)).toBe('pigeon');
    expect(messengerCode('pigeon')).toBe(90);
    expect(deliveryTopic('pigeon').name).toBe('mds.delivery.pigeon.v1');
    expect(() => messengerCode('owl')).toThrow(/no messenger "owl"/);
  });
});
