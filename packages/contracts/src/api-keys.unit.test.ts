import { describe, expect, it } from 'vitest';
import { apiKeyIdOf, effectiveScopes, LEGACY_API_KEY_SCOPES } from './api-keys.js';

describe('effectiveScopes', () => {
  it('gives a key issued before scopes existed (none named) the legacy default', () => {
    expect(effectiveScopes([])).toEqual([...LEGACY_API_KEY_SCOPES]);
  });

  it('keeps the scopes this build knows and drops the others', () => {
    expect(effectiveScopes(['send', 'export', 'read'])).toEqual(['send', 'read']);
  });

  it('grants nothing to a key whose scopes are all unknown to this build', () => {
    expect(effectiveScopes(['export'])).toEqual([]);
    expect(effectiveScopes(['export', 'admin'])).toEqual([]);
  });
});

describe('apiKeyIdOf', () => {
  it('reads the id of a well-formed key only', () => {
    expect(apiKeyIdOf(`mds_abcdef012345_${'a'.repeat(43)}`)).toBe('abcdef012345');
    expect(apiKeyIdOf(`mds_ABCDEF012345_${'a'.repeat(43)}`)).toBeUndefined();
    expect(apiKeyIdOf('mds_abc_def')).toBeUndefined();
  });
});
