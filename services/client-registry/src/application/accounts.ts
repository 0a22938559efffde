import { randomUUID } from 'node:crypto';
import { newEvent, topics, type AccountEvent } from '@mds/contracts';
import type { Knex } from '@mds/db';
import { DomainError } from '@mds/eventsourcing';
import type { OutgoingEvent } from '@mds/kafka';
import {
  decideAccount,
  decideCreate,
  evolveAccount,
  type AccountCommand,
  type AccountEventCase,
  type AccountState,
  type MessengerName,
} from '../domain/accounts.js';
import { botOwner, loadAccount, lockCompany, saveAccount } from '../adapters/db/accounts-store.js';
import { appendToOutbox } from '@mds/outbox';
import { checkBotToken, type MessengerEndpoints } from '../adapters/messengers.js';
import { LEGACY_API_KEY_SCOPES, type ApiKeyScope } from '@mds/contracts';
import { newApiKey, newWebhookSecret, seal, unseal, type Keyring } from '../adapters/secrets.js';

export const PRODUCER = 'client-registry';

export interface AccountsDeps {
  db: Knex;
  keyring: Keyring;
  messengers: MessengerEndpoints;
  webhookSecretOverlapHours: number;
  now: () => Date;
  /** Called after a commit that put events in the outbox. */
  onCommitted: () => void;
}

/** Why a bot token was not accepted: the messenger said no, or could not be asked. */
export class TokenCheckError extends Error {
  constructor(
    readonly reason: 'rejected' | 'unreachable',
    message: string,
  ) {
    super(message);
  }
}

function accountRecords(companyId: string, events: AccountEventCase[], at: Date): OutgoingEvent[] {
  return events.map((event) => ({
    topic: topics.account,
    key: companyId,
    record: newEvent<AccountEvent>({
      eventId: randomUUID(),
      occurredAt: at,
      companyId,
      streamId: companyId,
      producer: PRODUCER,
      event,
    }),
  }));
}

/** Account commands: decide against the stored document, store the new one and its events in one transaction. */
export function createAccounts(deps: AccountsDeps) {
  async function commit(
    companyId: string,
    decide: (state: AccountState | undefined) => AccountEventCase[],
  ): Promise<AccountState> {
    const at = deps.now();
    const state = await deps.db.transaction(async (trx) => {
      await lockCompany(trx, companyId);
      const before = await loadAccount(trx, companyId);
      const events = decide(before);
      if (events.length === 0) {
        if (!before) throw new DomainError('COMPANY_NOT_FOUND', `no company ${companyId}`);
        return before;
      }
      const after = events.reduce<AccountState | undefined>(
        (s, event) => evolveAccount(s, companyId, { at: at.toISOString(), event }),
        before,
      )!;
      await saveAccount(trx, after, at.toISOString());
      await appendToOutbox(trx, accountRecords(companyId, events, at));
      return after;
    });
    deps.onCommitted();
    return state;
  }

  const onCompany = (companyId: string, command: AccountCommand) =>
    commit(companyId, (state) => {
      if (!state) throw new DomainError('COMPANY_NOT_FOUND', `no company ${companyId}`);
      return decideAccount(command, state);
    });

  return {
    createCompany: (name: string) => {
      const companyId = randomUUID();
      return commit(companyId, () => decideCreate({ name }));
    },

    /** Issues a key; the key itself is in the result only, never stored. */
    async issueApiKey(
      companyId: string,
      label: string,
      scopes: readonly ApiKeyScope[] = LEGACY_API_KEY_SCOPES,
    ) {
      const key = newApiKey();
      await onCompany(companyId, {
        type: 'IssueApiKey',
        keyId: key.keyId,
        keyHash: key.keyHash,
        keyPrefix: key.keyPrefix,
        label,
        scopes,
      });
      return {
        keyId: key.keyId,
        apiKey: key.apiKey,
        keyPrefix: key.keyPrefix,
        label,
        scopes: [...new Set(scopes)],
      };
    },

    revokeApiKey: (companyId: string, keyId: string) => onCompany(companyId, { type: 'RevokeApiKey', keyId }),

    async configureWebhook(companyId: string, url: string) {
      const state = await onCompany(companyId, {
        type: 'ConfigureWebhook',
        url,
        newSecret: { secretId: randomUUID(), secret: seal(deps.keyring, newWebhookSecret()) },
      });
      return state.webhook!;
    },

    async rotateWebhookSecret(companyId: string) {
      const at = deps.now();
      const secret = newWebhookSecret();
      const state = await onCompany(companyId, {
        type: 'RotateWebhookSecret',
        secretId: randomUUID(),
        secret: seal(deps.keyring, secret),
        previousExpiresAt: new Date(at.getTime() + deps.webhookSecretOverlapHours * 3_600_000).toISOString(),
      });
      return { webhook: state.webhook!, secret };
    },

    setWebhookEnabled: (companyId: string, enabled: boolean, reason = 'disabled through the admin API') =>
      onCompany(companyId, enabled ? { type: 'EnableWebhook' } : { type: 'DisableWebhook', reason }),

    /** Checks the token with the messenger first, then registers the bot with its token sealed. */
    async registerBot(
      companyId: string,
      input: { messenger: MessengerName; name: string; token: string; makeDefault: boolean },
    ) {
      const check = await checkBotToken(input.messenger, input.token, deps.messengers);
      if (!check.ok) throw new TokenCheckError(check.reason, check.detail);
      const owner = await botOwner(deps.db, input.messenger, check.bot.providerBotId);
      if (owner) {
        throw new DomainError(
          'BOT_ALREADY_REGISTERED',
          `this ${input.messenger} bot is already registered${owner === companyId ? '' : ' by another company'}`,
        );
      }
      const botId = randomUUID();
      let state: AccountState;
      try {
        state = await onCompany(companyId, {
          type: 'RegisterBot',
          botId,
          messenger: input.messenger,
          name: input.name,
          token: seal(deps.keyring, input.token),
          providerBotId: check.bot.providerBotId,
          username: check.bot.username,
          makeDefault: input.makeDefault,
        });
      } catch (error) {
        // Two registrations of one bot at once: the unique index decides, and the loser hears why.
        if ((error as { code?: string }).code === '23505') {
          throw new DomainError(
            'BOT_ALREADY_REGISTERED',
            `this ${input.messenger} bot is already registered`,
          );
        }
        throw error;
      }
      return { bot: state.bots[botId]!, isDefault: state.defaultBots[input.messenger] === botId };
    },

    removeBot: (companyId: string, botId: string) => onCompany(companyId, { type: 'RemoveBot', botId }),
    chooseDefaultBot: (companyId: string, botId: string) =>
      onCompany(companyId, { type: 'ChooseDefaultBot', botId }),

    /** The plain signing secrets of a company's endpoint that are valid now (current first). */
    signingSecrets(state: AccountState, at = deps.now()) {
      return (state.webhook?.secrets ?? [])
        .filter((s) => !s.expiresAt || s.expiresAt > at.toISOString())
        .sort((a, b) => Number(Boolean(a.expiresAt)) - Number(Boolean(b.expiresAt)))
        .map((s) => ({
          secretId: s.secretId,
          secret: unseal(deps.keyring, s.secret),
          expiresAt: s.expiresAt,
        }));
    },

    /** Asks the messenger about a registered bot's token now (getMe / GET /me): is the bot still usable. */
    checkBot: (state: AccountState, botId: string) => {
      const bot = state.bots[botId]!;
      return checkBotToken(bot.messenger, unseal(deps.keyring, bot.token), deps.messengers);
    },

    botToken: (state: AccountState, botId: string) => {
      const bot = state.bots[botId];
      return bot ? unseal(deps.keyring, bot.token) : undefined;
    },
  };
}

export type Accounts = ReturnType<typeof createAccounts>;
