import type { Messenger } from '@mds/contracts';
import type { ClientTlsFiles } from '@mds/grpc';
import { createRegistryCache } from './cache.js';
import { createRegistryClient, type BotCredentials, type BotSummary } from './client.js';

/** The bots of one messenger and their tokens, as client-registry knows them. */
export interface BotDirectory {
  list(): Promise<BotSummary[]>;
  /** The bot's credentials (cached); undefined when the registry no longer knows the bot. */
  credentials(botId: string): Promise<BotCredentials | undefined>;
  /** Forgets a cached token (after the messenger refused it, it may have been replaced). */
  forget(botId: string): void;
  close(): void;
}

/** client-registry over gRPC, tokens cached for `ttlMs` (a replaced token is picked up within it). */
export function registryDirectory(o: {
  address: string;
  token: string;
  /** TLS to client-registry; unset: plaintext. */
  tls?: ClientTlsFiles | undefined;
  messenger: Messenger;
  ttlMs?: number;
}): BotDirectory {
  const client = createRegistryClient({ address: o.address, token: o.token, tls: o.tls, deadlineMs: 5_000 });
  const cache = createRegistryCache<BotCredentials | undefined>({
    ttlMs: o.ttlMs ?? 60_000,
    maxEntries: 10_000,
  });
  return {
    list: () => client.listBots(o.messenger),
    credentials: (botId) => cache.get(botId, () => client.botCredentials(botId)),
    forget: (botId) => cache.forget(botId),
    close: () => client.close(),
  };
}
