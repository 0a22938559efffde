import { grpc, isGrpcError } from '@mds/grpc';

export type RegistryErrorKind =
  /** The registry could not be asked, or failed (unreachable, deadline, internal error). */
  | 'unavailable'
  /** The registry refused this service itself (its credential, or a method it may not call): a misconfiguration. */
  | 'refused'
  /** The registry answered something this client cannot use. */
  | 'bad_answer'
  /** As many lookups as allowed are already waiting for the registry: this one was not started. */
  | 'busy';

/**
 * client-registry gave no usable answer. `retriable`: the same question may well be answered later (the
 * registry is away, slow or this client is busy); false when asking again will not help until someone fixes
 * a configuration or the registry. Either way the caller cannot tell a good value from a bad one right now.
 */
export class RegistryError extends Error {
  override readonly name = 'RegistryError';
  readonly kind: RegistryErrorKind;
  readonly retriable: boolean;
  /** The gRPC status the registry's answer carried, when there was one. */
  readonly grpcCode: grpc.status | undefined;

  constructor(message: string, o: { kind: RegistryErrorKind; grpcCode?: grpc.status; cause?: unknown }) {
    super(message, o.cause === undefined ? undefined : { cause: o.cause });
    this.kind = o.kind;
    this.retriable = o.kind === 'unavailable' || o.kind === 'busy';
    this.grpcCode = o.grpcCode;
  }
}

const REFUSALS = new Set<grpc.status>([
  grpc.status.UNAUTHENTICATED,
  grpc.status.PERMISSION_DENIED,
  grpc.status.UNIMPLEMENTED,
  grpc.status.INVALID_ARGUMENT,
]);

/** A failed call as a RegistryError: a refusal of this service is not retriable, anything else is. */
export function registryErrorOf(error: unknown): RegistryError {
  if (error instanceof RegistryError) return error;
  const grpcCode = isGrpcError(error) ? error.code : undefined;
  return new RegistryError(`client-registry did not answer: ${(error as Error).message}`, {
    kind: grpcCode !== undefined && REFUSALS.has(grpcCode) ? 'refused' : 'unavailable',
    ...(grpcCode !== undefined ? { grpcCode } : {}),
    cause: error,
  });
}
