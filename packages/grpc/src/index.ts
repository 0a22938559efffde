import * as grpc from '@grpc/grpc-js';
import { HealthImplementation, service as healthService, type ServingStatus } from 'grpc-health-check';
import type { Logger } from '@mds/logging';
import {
  bearerToken,
  channelCredentials,
  serverCredentials,
  type CallerAuthorizer,
  type ClientTlsFiles,
  type ServerTlsFiles,
} from './security.js';

export * from './security.js';

export { grpc };
export type { ServingStatus };

export interface ServiceRegistration {
  /** Fully qualified name, e.g. "mds.registry.v1.RegistryService", as health checks name it. */
  name: string;
  definition: grpc.ServiceDefinition;
  implementation: grpc.UntypedServiceImplementation;
}

export interface GrpcServer {
  /** Binds to host:port (0 picks a free port) and starts serving; returns the bound port. */
  start(host: string, port: number): Promise<number>;
  /** What health checks report for one service, or for the whole server with "". */
  setStatus(service: string, status: ServingStatus): void;
  /** Reports NOT_SERVING, lets in-flight calls finish for up to graceMs, then cancels the rest. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Wraps every unary handler: a call without a known service token is UNAUTHENTICATED, one from a caller not
 * allowed this method PERMISSION_DENIED; an exception (thrown or rejected) becomes INTERNAL and a log line,
 * never a crash, and tells the caller nothing internal.
 */
function guarded(
  name: string,
  implementation: grpc.UntypedServiceImplementation,
  logger: Logger,
  authorizer: CallerAuthorizer | undefined,
): grpc.UntypedServiceImplementation {
  const out: grpc.UntypedServiceImplementation = {};
  for (const [method, handler] of Object.entries(implementation)) {
    const rpc = `${name}/${method.charAt(0).toUpperCase()}${method.slice(1)}`;
    out[method] = ((call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (authorizer) {
        const verdict = authorizer.check(bearerToken(call.metadata), method, rpc);
        if (!verdict.ok) {
          logger.warn(
            { rpc, caller: verdict.caller, peer: call.getPeer(), code: verdict.code },
            verdict.details,
          );
          return callback({ code: verdict.code, details: verdict.details });
        }
      }
      const fail = (error: unknown) => {
        logger.error({ err: error, rpc: `${name}/${method}` }, 'gRPC handler failed');
        callback({ code: grpc.status.INTERNAL, details: 'internal error' });
      };
      try {
        const result = (handler as grpc.handleUnaryCall<unknown, unknown>)(call, callback) as unknown;
        if (result instanceof Promise) result.catch(fail);
      } catch (error) {
        fail(error);
      }
    }) as grpc.UntypedHandleCall;
  }
  return out;
}

/** A gRPC server with the standard health service (grpc.health.v1.Health) beside ours. */
export function createGrpcServer(o: {
  logger: Logger;
  services: ServiceRegistration[];
  /**
   * Every call must carry "authorization: Bearer <token>" of a caller allowed the method (health checks
   * excepted, for probes). Unset: no check (tests of the transport only).
   */
  authorizer?: CallerAuthorizer;
  /** TLS (mTLS with a client CA); the files are re-read when they change. Unset: plaintext. */
  tls?: ServerTlsFiles;
}): GrpcServer {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
  const health = new HealthImplementation({ '': 'NOT_SERVING' });
  health.addToServer(server);
  for (const s of o.services) {
    server.addService(s.definition, guarded(s.name, s.implementation, o.logger, o.authorizer));
    health.setStatus(s.name, 'NOT_SERVING');
  }
  return {
    start: (host, port) =>
      new Promise((resolve, reject) => {
        server.bindAsync(`${host}:${port}`, serverCredentials(o.tls), (error, bound) => {
          if (error) return reject(error);
          health.setStatus('', 'SERVING');
          for (const s of o.services) health.setStatus(s.name, 'SERVING');
          o.logger.info(
            { port: bound, tls: o.tls ? (o.tls.clientCaFile ? 'mutual' : 'server') : 'none' },
            'gRPC server listening',
          );
          resolve(bound);
        });
      }),
    setStatus: (service, status) => health.setStatus(service, status),
    stop: async (graceMs = 5_000) => {
      health.setStatus('', 'NOT_SERVING');
      for (const s of o.services) health.setStatus(s.name, 'NOT_SERVING');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

/** Sets a deadline on every call that has none: no internal question waits forever. */
export function deadlineInterceptor(deadlineMs: number): grpc.Interceptor {
  return (options, nextCall) => {
    if (options.deadline === undefined) options.deadline = new Date(Date.now() + deadlineMs);
    return new grpc.InterceptingCall(nextCall(options));
  };
}

export interface ClientOptions {
  /** Default deadline of each call (callers may set their own). */
  deadlineMs?: number;
  /** Retries of calls that failed with UNAVAILABLE before reaching the server. */
  maxAttempts?: number;
  /** This caller's service token, sent on every call. */
  token?: string;
  /** With TLS: the name the server's certificate carries, when the address's host is another. */
  serverName?: string | undefined;
}

/** Adds "authorization: Bearer <token>" to every call. */
export function tokenInterceptor(token: string): grpc.Interceptor {
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set('authorization', `Bearer ${token}`);
        next(metadata, listener);
      },
    });
}

/** Channel options: deadlines by default, and retries of UNAVAILABLE with backoff (gRPC service config). */
export function clientChannelOptions(serviceName: string, o: ClientOptions = {}): grpc.ClientOptions {
  return {
    interceptors: [
      deadlineInterceptor(o.deadlineMs ?? 2_000),
      ...(o.token ? [tokenInterceptor(o.token)] : []),
    ],
    ...(o.serverName ? { 'grpc.ssl_target_name_override': o.serverName } : {}),
    'grpc.enable_retries': 1,
    'grpc.service_config': JSON.stringify({
      methodConfig: [
        {
          name: [{ service: serviceName }],
          retryPolicy: {
            maxAttempts: o.maxAttempts ?? 3,
            initialBackoff: '0.05s',
            maxBackoff: '0.5s',
            backoffMultiplier: 2,
            retryableStatusCodes: ['UNAVAILABLE'],
          },
        },
      ],
    }),
  };
}

/**
 * What a client of `serviceName` is constructed with: channel credentials (plaintext, or TLS from files) and
 * channel options (token, deadlines, retries): `new Client(address, ...clientChannel(name, o))`.
 */
export function clientChannel(
  serviceName: string,
  o: ClientOptions & { tls?: ClientTlsFiles | undefined } = {},
): [grpc.ChannelCredentials, grpc.ClientOptions] {
  const { tls, ...options } = o;
  return [
    channelCredentials(tls),
    clientChannelOptions(serviceName, {
      ...options,
      ...(tls?.serverName ? { serverName: tls.serverName } : {}),
    }),
  ];
}

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (error: grpc.ServiceError | null, response: Res) => void,
) => grpc.ClientUnaryCall;

type RequestOf<M> = M extends (
  request: infer Req,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (error: grpc.ServiceError | null, response: infer _Res) => void,
) => grpc.ClientUnaryCall
  ? Req
  : never;
type ResponseOf<M> = M extends (
  request: infer _Req,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (error: grpc.ServiceError | null, response: infer Res) => void,
) => grpc.ClientUnaryCall
  ? Res
  : never;

/** Promise form of a generated unary client method, named by key, with an optional per-call deadline. */
export function unary<C extends grpc.Client, K extends keyof C & string>(
  client: C,
  method: K,
  request: RequestOf<C[K]>,
  options: { deadlineMs?: number; metadata?: grpc.Metadata } = {},
): Promise<ResponseOf<C[K]>> {
  return new Promise((resolve, reject) => {
    const callOptions: Partial<grpc.CallOptions> = options.deadlineMs
      ? { deadline: new Date(Date.now() + options.deadlineMs) }
      : {};
    const call = client[method] as unknown as UnaryMethod<RequestOf<C[K]>, ResponseOf<C[K]>>;
    call.call(client, request, options.metadata ?? new grpc.Metadata(), callOptions, (error, response) =>
      error ? reject(error) : resolve(response),
    );
  });
}

export function isGrpcError(error: unknown, code?: grpc.status): error is grpc.ServiceError {
  return (
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    typeof (error as grpc.ServiceError).code === 'number' &&
    (code === undefined || (error as grpc.ServiceError).code === code)
  );
}

const HealthClient = grpc.makeClientConstructor(healthService, 'Health');

/** Asks a server's standard health service how one service (or "" for the server) is doing. */
export async function checkHealth(
  address: string,
  service = '',
  deadlineMs = 1_000,
): Promise<ServingStatus | 'UNREACHABLE'> {
  const client = new HealthClient(address, grpc.credentials.createInsecure());
  try {
    const response = await new Promise<{ status: ServingStatus }>((resolve, reject) => {
      (client as unknown as { check: UnaryMethod<{ service: string }, { status: ServingStatus }> }).check(
        { service },
        new grpc.Metadata(),
        { deadline: new Date(Date.now() + deadlineMs) },
        (error, res) => (error ? reject(error) : resolve(res)),
      );
    });
    return response.status;
  } catch {
    return 'UNREACHABLE';
  } finally {
    client.close();
  }
}
