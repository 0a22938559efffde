import { readFile } from 'node:fs/promises';
import { CallerAuthorizer, parseCallerList, tokenHash, type CallerCredential } from '@mds/grpc';
import type { Logger } from '@mds/logging';
import { registryCallerNames, registryCallerRpcs, type Config } from '../../config.js';

/** The development-only shared token's caller: may call every RPC. */
const SHARED = 'shared-development-token';

/**
 * Who may call the gRPC API (REGISTRY_CALLERS, or the development token). With REGISTRY_CALLERS_FILE the file
 * is re-read every GRPC_FILES_RELOAD_MS: an added or removed token takes effect without a restart (a list
 * that does not parse is logged and the previous one kept).
 */
export function registryAuthorizer(
  config: Config,
  logger: Logger,
): { authorizer: CallerAuthorizer; stop(): void } {
  if (config.REGISTRY_CALLERS === undefined) {
    logger.warn(
      'gRPC: INTERNAL_GRPC_TOKEN lets its holder call every RPC; set REGISTRY_CALLERS for per-service credentials',
    );
    const allRpcs = [...new Set(Object.values(registryCallerRpcs()).flat())];
    const credentials: CallerCredential[] = [
      { caller: SHARED, tokenSha256: tokenHash(config.INTERNAL_GRPC_TOKEN!) },
    ];
    return { authorizer: new CallerAuthorizer({ [SHARED]: allRpcs }, credentials), stop: () => {} };
  }
  const authorizer = new CallerAuthorizer(
    registryCallerRpcs(),
    parseCallerList(config.REGISTRY_CALLERS, registryCallerNames()),
  );
  logger.info({ callers: summary(config.REGISTRY_CALLERS) }, 'gRPC callers');
  const file = config.REGISTRY_CALLERS_FILE;
  if (!file) return { authorizer, stop: () => {} };
  let current = config.REGISTRY_CALLERS;
  let reading = false;
  const timer = setInterval(() => {
    if (reading) return;
    reading = true;
    readFile(file, 'utf8')
      .then((text) => {
        const next = text.replace(/\r?\n$/, '');
        if (next === current) return;
        authorizer.replace(parseCallerList(next, registryCallerNames()));
        current = next;
        logger.info({ callers: summary(next) }, 'gRPC callers reloaded');
      })
      .catch((error: unknown) =>
        logger.error(
          { err: error, file },
          'gRPC callers file not reloaded; the previous list stays in force',
        ),
      )
      .finally(() => {
        reading = false;
      });
  }, config.GRPC_FILES_RELOAD_MS);
  timer.unref();
  return { authorizer, stop: () => clearInterval(timer) };
}

/** How many credentials each caller has (never the hashes themselves). */
function summary(list: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const { caller } of parseCallerList(list, registryCallerNames())) out[caller] = (out[caller] ?? 0) + 1;
  return out;
}
