import { describe, expect, it } from 'vitest';
import { grpc } from '@mds/grpc';
import { RegistryError, registryErrorOf } from './errors.js';

const grpcError = (code: grpc.status, details: string) =>
  Object.assign(new Error(`${code} ${grpc.status[code]}: ${details}`), {
    code,
    details,
    metadata: new grpc.Metadata(),
  });

describe('a registry error', () => {
  it('is retriable when the registry is away or failing, not when it refuses this service', () => {
    for (const code of [grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED, grpc.status.INTERNAL]) {
      expect(registryErrorOf(grpcError(code, 'x'))).toMatchObject({
        kind: 'unavailable',
        retriable: true,
        grpcCode: code,
      });
    }
    for (const code of [grpc.status.UNAUTHENTICATED, grpc.status.PERMISSION_DENIED]) {
      expect(registryErrorOf(grpcError(code, 'x'))).toMatchObject({
        kind: 'refused',
        retriable: false,
        grpcCode: code,
      });
    }
    const plain = registryErrorOf(new Error('socket hang up'));
    expect(plain).toBeInstanceOf(RegistryError);
    expect(plain).toMatchObject({ kind: 'unavailable', retriable: true, grpcCode: undefined });
    expect(plain.message).toBe('client-registry did not answer: socket hang up');
    expect(registryErrorOf(plain)).toBe(plain);
  });
});
