import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@mds/config';
import { BUILT_IN_MESSENGERS } from '@mds/contracts';
import { providers } from '@mds/messengers';
import { configSchema, senderSchemaName, withMessengerDefaults } from './config.js';

const base = {
  KAFKA_BROKERS: '127.0.0.1:9092',
  DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
  INTERNAL_GRPC_TOKEN: 'x'.repeat(24),
};

describe("a sender deployment's settings", () => {
  it("take each messenger's own defaults unless set", () => {
    for (const m of BUILT_IN_MESSENGERS) {
      const provider = providers[m.name];
      const config = withMessengerDefaults(
        loadConfig(configSchema, { ...base, MESSENGER: m.name }),
        provider,
      );
      expect(config).toMatchObject({
        HTTP_PORT: provider.senderDefaults.httpPort,
        BOT_RATE_PER_SECOND: provider.senderDefaults.botRatePerSecond,
        CHAT_RATE_PER_SECOND: provider.senderDefaults.chatRatePerSecond,
        MESSENGER_API_BASE: provider.defaultApiBase,
      });
      const set = loadConfig(configSchema, {
        ...base,
        MESSENGER: m.name,
        HTTP_PORT: '9000',
        CHAT_RATE_PER_SECOND: '0',
        MESSENGER_API_BASE: 'http://127.0.0.1:4000//',
      });
      expect(withMessengerDefaults(set, provider)).toMatchObject({
        HTTP_PORT: 9000,
        CHAT_RATE_PER_SECOND: 0,
        MESSENGER_API_BASE: 'http://127.0.0.1:4000',
      });
    }
  });

  it('keep the names a running installation has (schemas telegram_sender, max_sender)', () => {
    expect(BUILT_IN_MESSENGERS.map(senderSchemaName)).toEqual(['telegram_sender', 'max_sender']);
  });

  it('refuse a missing MESSENGER, or one the catalogue does not name, saying which there are', () => {
    expect(() => loadConfig(configSchema, base)).toThrow(ConfigError);
    expect(() => loadConfig(configSchema, { ...base, MESSENGER: 'whatsapp' })).toThrow(
      /MESSENGER.*no messenger "whatsapp" in the catalogue \(messengers: telegram, max/,
    );
  });
});
