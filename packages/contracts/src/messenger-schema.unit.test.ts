import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { messengerNameSchema, registerMessenger } from './index.js';
import { fakeMessenger } from './test-support/messengers.js';

describe('a messenger name in a request or a response', () => {
  const schema = z.object({ messenger: messengerNameSchema() });

  it('is one of the catalogue, refused otherwise as a zod enum refuses (invalid_value, the names listed)', () => {
    expect(schema.parse({ messenger: 'max' })).toEqual({ messenger: 'max' });
    const refused = schema.safeParse({ messenger: 'pigeon' });
    expect(refused.error?.issues).toEqual([
      expect.objectContaining({
        code: 'invalid_value',
        path: ['messenger'],
        message: 'Expected "telegram" or "max"',
      }),
    ]);
    expect(schema.safeParse({}).error?.issues[0]?.message).toBe('Required');
    expect(schema.safeParse({ messenger: 7 }).error?.issues[0]?.code).toBe('invalid_type');
  });

  it('is checked against the catalogue when parsed: a messenger registered after the schema was made is taken', () => {
    expect(z.toJSONSchema(schema).properties?.messenger).toEqual({
      type: 'string',
      enum: ['telegram', 'max'],
    });
    registerMessenger(fakeMessenger('pigeon', 90));
    expect(schema.parse({ messenger: 'pigeon' })).toEqual({ messenger: 'pigeon' });
    expect(schema.safeParse({ messenger: 'owl' }).error?.issues[0]?.message).toBe(
      'Expected "telegram" or "max" or "pigeon"',
    );
    expect(z.toJSONSchema(z.object({ m: messengerNameSchema() })).properties?.m).toEqual({
      type: 'string',
      enum: ['telegram', 'max', 'pigeon'],
    });
  });
});
