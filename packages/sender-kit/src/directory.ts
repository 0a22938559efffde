import { singleFlightCache } from '@mds/async';
import { registryV1, type Messenger } from '@mds/contracts';
import { clientChannel, grpc, isGrpcError, unary, type ClientTlsFiles } from '@mds/grpc';
import type { BotCredentials } from './provider.js';

export interface BotSummary {
  botId: string;
  companyId: string;
  name: string;
}

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
  const client = new registryV1.RegistryServiceClient(
    o.address,
    ...clientChannel('mds.registry.v1.RegistryService', { deadlineMs: 5_000, token: o.token, tls: o.tls }),
  );

  async function ask(botId: string): Promise<BotCredentials | undefined> {
    try {
      const r = await unary(client, 'getBotCredentials', { botId });
      return { botId: r.botId, companyId: r.companyId, name: r.name, token: r.token };
    } catch (error) {
      if (isGrpcError(error, grpc.status.NOT_FOUND)) return undefined;
      throw error;
    }
  }

  const cache = singleFlightCache({ lookup: ask, ttlMs: o.ttlMs ?? 60_000 });

  return {
    async list() {
      const r = await unary(client, 'listBots', { messenger: o.messenger });
      return r.bots.map((b) => ({ botId: b.botId, companyId: b.companyId, name: b.name }));
    },
    credentials: (botId) => cache.get(botId),
    forget: (botId) => cache.forget(botId),
    close: () => client.close(),
  };
}
