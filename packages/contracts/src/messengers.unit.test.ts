import { describe, expect, it } from 'vitest';
import { Messenger, MESSENGER_CODE, messengerNameOf } from './index.js';

describe('the messenger vocabulary', () => {
  it('names every code and codes every name, both ways', () => {
    expect(MESSENGER_CODE).toEqual({ telegram: Messenger.MESSENGER_TELEGRAM, max: Messenger.MESSENGER_MAX });
    for (const [name, code] of Object.entries(MESSENGER_CODE)) expect(messengerNameOf(code)).toBe(name);
  });

  it('names no messenger for the unspecified, unrecognized or an unknown code', () => {
    expect(messengerNameOf(Messenger.MESSENGER_UNSPECIFIED)).toBeUndefined();
    expect(messengerNameOf(Messenger.UNRECOGNIZED)).toBeUndefined();
    expect(messengerNameOf(3)).toBeUndefined();
  });
});
