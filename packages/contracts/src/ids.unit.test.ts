import { describe, expect, it } from 'vitest';
import { derivedEventId } from './ids.js';

describe('derivedEventId', () => {
  it('is a version 5 UUID, the same for the same cause and purpose, different otherwise', () => {
    const a = derivedEventId('7d1f7a4e-3b1c-4f0e-8a55-0c1d2e3f4a5b', 'routed');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(derivedEventId('7d1f7a4e-3b1c-4f0e-8a55-0c1d2e3f4a5b', 'routed')).toBe(a);
    expect(derivedEventId('7d1f7a4e-3b1c-4f0e-8a55-0c1d2e3f4a5b', 'failed')).not.toBe(a);
    expect(derivedEventId('00000000-3b1c-4f0e-8a55-0c1d2e3f4a5b', 'routed')).not.toBe(a);
  });
});
