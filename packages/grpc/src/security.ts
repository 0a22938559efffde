import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';

/** SHA-256 of a service token, hex: what a server's caller list stores instead of the token. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** One credential a server accepts: who presents it, by the SHA-256 of its token. */
export interface CallerCredential {
  caller: string;
  tokenSha256: string;
}

export class CallerListError extends Error {
  override readonly name = 'CallerListError';
}

/**
 * Parses a caller list: entries "<caller>:<sha256 hex of its token>" separated by commas or new lines
 * ("#" starts a comment). A caller may have several entries (old and new token during a rotation); one
 * token hash may not belong to two callers, and every caller must be one `known` names.
 */
export function parseCallerList(text: string, known: readonly string[]): CallerCredential[] {
  const out: CallerCredential[] = [];
  const owners = new Map<string, string>();
  const entries = text
    .split(/\r?\n/)
    .map((line) => line.replace(/#.*$/, ''))
    .flatMap((line) => line.split(','))
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const match = /^([a-z0-9][a-z0-9-]*):([0-9a-fA-F]{64})$/.exec(entry);
    if (!match) {
      throw new CallerListError(
        `"${entry.slice(0, 40)}" is not "<caller>:<sha256 hex of its token>" (64 hex digits)`,
      );
    }
    const caller = match[1]!;
    const hash = match[2]!.toLowerCase();
    if (!known.includes(caller)) {
      throw new CallerListError(`unknown caller "${caller}" (known: ${known.join(', ')})`);
    }
    const owner = owners.get(hash);
    if (owner && owner !== caller) {
      throw new CallerListError(`callers "${owner}" and "${caller}" share a token: give each its own`);
    }
    owners.set(hash, caller);
    out.push({ caller, tokenSha256: hash });
  }
  if (out.length === 0) throw new CallerListError('the caller list is empty');
  return out;
}

/**
 * Who may call what: each caller's token (by hash) and the methods it may call, by the method names of the
 * service implementation (e.g. "resolveApiKey"). The list can be replaced while serving (a rotation).
 */
export class CallerAuthorizer {
  private credentials: { caller: string; hash: Buffer }[] = [];

  constructor(
    /** Method names each caller may call; a caller that is not here may call nothing. */
    readonly permissions: Readonly<Record<string, readonly string[]>>,
    credentials: CallerCredential[],
  ) {
    this.replace(credentials);
  }

  /** Takes a new list of credentials (the old list stops being accepted at once). */
  replace(credentials: CallerCredential[]): void {
    this.credentials = credentials.map((c) => ({
      caller: c.caller,
      hash: Buffer.from(c.tokenSha256, 'hex'),
    }));
  }

  /** The caller a token belongs to: every credential is compared, in constant time, whatever matches. */
  identify(token: string | undefined): string | undefined {
    if (!token) return undefined;
    const presented = createHash('sha256').update(token, 'utf8').digest();
    let found: string | undefined;
    for (const credential of this.credentials) {
      if (timingSafeEqual(presented, credential.hash)) found = credential.caller;
    }
    return found;
  }

  /** OK, or the gRPC error a call from this token to this method gets. */
  check(
    token: string | undefined,
    method: string,
    rpc: string,
  ): { ok: true; caller: string } | { ok: false; code: grpc.status; details: string; caller?: string } {
    const caller = this.identify(token);
    if (!caller) {
      return { ok: false, code: grpc.status.UNAUTHENTICATED, details: 'missing or unknown service token' };
    }
    if (!this.permissions[caller]?.includes(method)) {
      return {
        ok: false,
        code: grpc.status.PERMISSION_DENIED,
        details: `caller "${caller}" may not call ${rpc}`,
        caller,
      };
    }
    return { ok: true, caller };
  }
}

/** The bearer token of a call's "authorization: Bearer <token>" header, if any. */
export function bearerToken(metadata: grpc.Metadata): string | undefined {
  const value = metadata.get('authorization')[0];
  if (typeof value !== 'string' || !value.startsWith('Bearer ')) return undefined;
  return value.slice('Bearer '.length);
}

/** A server's TLS files: its certificate and key, and with `clientCaFile` mutual TLS (client certificates required). */
export interface ServerTlsFiles {
  certFile: string;
  keyFile: string;
  /** CA of the client certificates: set, every client must present a certificate it signed (mTLS). */
  clientCaFile?: string | undefined;
  /** How often the files are checked for changes (a renewed certificate is served without a restart). */
  reloadIntervalMs?: number;
}

/** A client's TLS files: the CA of the server's certificate and, for mTLS, its own certificate and key. */
export interface ClientTlsFiles {
  /** CA of the server's certificate; unset: the system CAs (then the files are not watched). */
  caFile?: string | undefined;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  /** Name the server's certificate must carry, when it differs from the address's host. */
  serverName?: string | undefined;
  reloadIntervalMs?: number;
}

const DEFAULT_RELOAD_MS = 10_000;

function mustRead(file: string, what: string): void {
  try {
    readFileSync(file);
  } catch (error) {
    throw new Error(`${what} ${file} cannot be read: ${(error as Error).message}`, { cause: error });
  }
}

/** Server credentials that re-read the certificate files when they change (grpc-js' file watcher). */
export function serverCredentials(tls: ServerTlsFiles | undefined): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  mustRead(tls.certFile, 'gRPC TLS certificate');
  mustRead(tls.keyFile, 'gRPC TLS key');
  if (tls.clientCaFile) mustRead(tls.clientCaFile, 'gRPC client CA');
  const refreshIntervalMs = tls.reloadIntervalMs ?? DEFAULT_RELOAD_MS;
  const identity = new grpc.experimental.FileWatcherCertificateProvider({
    certificateFile: tls.certFile,
    privateKeyFile: tls.keyFile,
    refreshIntervalMs,
  });
  const clientCa = tls.clientCaFile
    ? new grpc.experimental.FileWatcherCertificateProvider({
        caCertificateFile: tls.clientCaFile,
        refreshIntervalMs,
      })
    : null;
  // grpc-js declares (ca, identity, ...) but its implementation takes the identity provider first and the
  // (optional) CA second: pass them in the order the implementation uses.
  const create = grpc.experimental.createCertificateProviderServerCredentials as unknown as (
    identity: grpc.experimental.CertificateProvider,
    ca: grpc.experimental.CertificateProvider | null,
    requireClientCertificate: boolean,
  ) => grpc.ServerCredentials;
  return create(identity, clientCa, clientCa !== null);
}

/** Channel credentials: plaintext without `tls`, else TLS (mTLS with a client certificate), files watched. */
export function channelCredentials(tls: ClientTlsFiles | undefined): grpc.ChannelCredentials {
  if (!tls) return grpc.credentials.createInsecure();
  if (Boolean(tls.certFile) !== Boolean(tls.keyFile)) {
    throw new Error('a gRPC client certificate needs both its certificate and its key file');
  }
  for (const [file, what] of [
    [tls.caFile, 'gRPC CA'],
    [tls.certFile, 'gRPC client certificate'],
    [tls.keyFile, 'gRPC client key'],
  ] as const) {
    if (file) mustRead(file, what);
  }
  const refreshIntervalMs = tls.reloadIntervalMs ?? DEFAULT_RELOAD_MS;
  if (!tls.caFile) {
    return grpc.credentials.createSsl(
      null,
      tls.keyFile ? readFileSync(tls.keyFile) : null,
      tls.certFile ? readFileSync(tls.certFile) : null,
    );
  }
  const ca = new grpc.experimental.FileWatcherCertificateProvider({
    caCertificateFile: tls.caFile,
    refreshIntervalMs,
  });
  const identity =
    tls.certFile && tls.keyFile
      ? new grpc.experimental.FileWatcherCertificateProvider({
          certificateFile: tls.certFile,
          privateKeyFile: tls.keyFile,
          refreshIntervalMs,
        })
      : null;
  return grpc.experimental.createCertificateProviderChannelCredentials(ca, identity);
}
