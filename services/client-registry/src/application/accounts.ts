import { randomUUID } from 'node:crypto';
import { newEvent, topics, type AccountEvent } from '@mds/contracts';
import type { Knex } from '@mds/db';
import { DomainError, fold } from '@mds/eventsourcing';
import type { OutgoingEvent } from '@mds/kafka';
import {
  accountDecider,
  type AccountCommand,
  type AccountEventCase,
  type AccountState,
  type MessengerName,
} from '../domain/accounts.js';
import { appendToOutbox } from '@mds/outbox';
import { LEGACY_API_KEY_SCOPES, type ApiKeyScope } from '@mds/contracts';
import type { AccountStore, BotTokenChecker } from './ports.js';
import { needsReseal, newApiKey, ownerOf, reseal, seal, unseal, type Keyring } from './secrets.js';
import type { SealedSecret } from '../domain/accounts.js';
import { allWebhookSecrets } from '../domain/webhook-endpoints.js';
import { webhookEndpointCommands, webhookSecretOwner } from './webhook-endpoints.js';

export const PRODUCER = 'client-registry';

/** Whom a sealed secret belongs to: its associated data (see ownerOf). */
export const botTokenOwner = (companyId: string, botId: string) => ownerOf('bot-token', companyId, botId);

/** What one company's reseal renewed. */
export interface ResealCount {
  botTokens: number;
  webhookSecrets: number;
}

export interface AccountsDeps {
  db: Knex;
  store: AccountStore;
  keyring: Keyring;
  /** Asks the messenger about a bot token (getMe / GET /me). */
  checkBotToken: BotTokenChecker;
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

type Commit = (
  companyId: string,
  command: (state: AccountState | undefined) => AccountCommand,
) => Promise<AccountState>;
/** Decides a command about an existing company and commits it: the account as it is after. */
export type OnCompany = (companyId: string, command: AccountCommand) => Promise<AccountState>;

/**
 * Decide against the stored document with the account's decider, store the new one and its events in one
 * transaction. The command may depend on the state it is decided on (a reseal renews what it finds).
 */
function accountCommits(deps: AccountsDeps): { commit: Commit; onCompany: OnCompany } {
  const commit: Commit = async (companyId, command) => {
    const at = deps.now();
    const decider = accountDecider(companyId);
    const state = await deps.db.transaction(async (trx) => {
      await deps.store.lockCompany(trx, companyId);
      const before = await deps.store.loadAccount(trx, companyId);
      const events = decider.decide({ ...command(before), at: at.toISOString() }, before);
      if (events.length === 0) {
        if (!before) throw new DomainError('COMPANY_NOT_FOUND', `no company ${companyId}`);
        return before;
      }
      const after = fold(decider.evolve, before, events)!;
      await deps.store.saveAccount(trx, after, at.toISOString());
      await appendToOutbox(
        trx,
        accountRecords(
          companyId,
          events.map((e) => e.event),
          at,
        ),
      );
      return after;
    });
    deps.onCommitted();
    return state;
  };

  const onCompany: OnCompany = (companyId, command) => commit(companyId, () => command);
  return { commit, onCompany };
}

/** Companies and their API keys. */
function companyCommands(commit: Commit, onCompany: OnCompany, nowOf: () => Date) {
  return {
    createCompany: (name: string) => {
      const companyId = randomUUID();
      return commit(companyId, () => ({ type: 'CreateCompany', name }));
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

    /**
     * Rolls a key: a new one (same label and scopes; the key itself is in the result only) and the old one
     * working `overlapSeconds` more (0: ends at once).
     */
    async rollApiKey(companyId: string, keyId: string, overlapSeconds: number) {
      const key = newApiKey();
      const now = nowOf();
      const state = await onCompany(companyId, {
        type: 'RollApiKey',
        keyId,
        newKeyId: key.keyId,
        keyHash: key.keyHash,
        keyPrefix: key.keyPrefix,
        now: now.toISOString(),
        ...(overlapSeconds > 0
          ? { expiresAt: new Date(now.getTime() + overlapSeconds * 1_000).toISOString() }
          : {}),
      });
      const rolled = state.apiKeys[key.keyId]!;
      const old = state.apiKeys[keyId]!;
      return { key: { ...rolled, apiKey: key.apiKey }, old };
    },
  };
}

/** A company's bots: registered with their tokens checked and sealed, removed, chosen as default. */
function botCommands(deps: AccountsDeps, onCompany: OnCompany) {
  return {
    /** Checks the token with the messenger first, then registers the bot with its token sealed. */
    async registerBot(
      companyId: string,
      input: { messenger: MessengerName; name: string; token: string; makeDefault: boolean },
    ) {
      const check = await deps.checkBotToken(input.messenger, input.token);
      if (!check.ok) throw new TokenCheckError(check.reason, check.detail);
      const owner = await deps.store.botOwner(deps.db, input.messenger, check.bot.providerBotId);
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
          token: seal(deps.keyring, input.token, botTokenOwner(companyId, botId)),
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

    /** Asks the messenger about a registered bot's token now (getMe / GET /me): is the bot still usable. */
    checkBot: (state: AccountState, botId: string) => {
      const bot = state.bots[botId]!;
      return deps.checkBotToken(
        bot.messenger,
        unseal(deps.keyring, bot.token, botTokenOwner(state.companyId, botId)),
      );
    },

    botToken: (state: AccountState, botId: string) => {
      const bot = state.bots[botId];
      return bot ? unseal(deps.keyring, bot.token, botTokenOwner(state.companyId, botId)) : undefined;
    },
  };
}

/**
 * Seals the company's bot tokens and webhook signing secrets again under the current key, bound to
 * their owners, where they are not yet: one SecretsResealed event, so a rebuild from the log ends with
 * the renewed values too. Throws if a secret cannot be opened (its key is gone from the keyring).
 */
function resealCommand(keyring: Keyring, commit: Commit) {
  return async function resealCompany(companyId: string): Promise<ResealCount> {
    const count: ResealCount = { botTokens: 0, webhookSecrets: 0 };
    await commit(companyId, (state): AccountCommand => {
      if (!state) throw new DomainError('COMPANY_NOT_FOUND', `no company ${companyId}`);
      const renew = <T>(
        items: T[],
        sealedOf: (item: T) => SealedSecret,
        idOf: (item: T) => string,
        owner: (id: string) => string,
      ) =>
        Object.fromEntries(
          items
            .filter((item) => needsReseal(keyring, sealedOf(item)))
            .map((item) => [idOf(item), reseal(keyring, sealedOf(item), owner(idOf(item)))]),
        );
      const botTokens = renew(
        Object.values(state.bots),
        (b) => b.token,
        (b) => b.botId,
        (id) => botTokenOwner(companyId, id),
      );
      const webhookSecrets = renew(
        allWebhookSecrets(state.webhookEndpoints),
        (s) => s.secret,
        (s) => s.secretId,
        (id) => webhookSecretOwner(companyId, id),
      );
      count.botTokens = Object.keys(botTokens).length;
      count.webhookSecrets = Object.keys(webhookSecrets).length;
      return { type: 'ResealSecrets', botTokens, webhookSecrets };
    });
    return count;
  };
}

/** Account commands: decide against the stored document, store the new one and its events in one transaction. */
export function createAccounts(deps: AccountsDeps) {
  const { commit, onCompany } = accountCommits(deps);
  return {
    /** The encryption key new secrets are sealed under. */
    currentKeyId: deps.keyring.currentId,
    listAccounts: () => deps.store.listAccounts(deps.db),
    ...companyCommands(commit, onCompany, deps.now),
    ...webhookEndpointCommands(deps, onCompany),
    ...botCommands(deps, onCompany),
    resealCompany: resealCommand(deps.keyring, commit),
  };
}

export type Accounts = ReturnType<typeof createAccounts>;
