import { DomainError, type Decider } from '@mds/eventsourcing';
import { messengerCode, messengerNameOf, type AccountEvent, type MessengerName } from '@mds/contracts';
import type { ApiKeyScope } from '@mds/contracts/api-keys';
import { sealed, unsealed, type SealedSecret } from './sealed-secrets.js';
import {
  allWebhookSecrets,
  decideWebhook,
  evolveWebhook,
  resealedEndpoints,
  type WebhookCommand,
  type WebhookEndpointRecord,
} from './webhook-endpoints.js';

export type { MessengerName, SealedSecret };
export type {
  WebhookCommand,
  WebhookEndpointRecord,
  WebhookEndpointSettings,
  WebhookSecretRecord,
} from './webhook-endpoints.js';

export interface ApiKeyRecord {
  keyId: string;
  keyHash: string;
  keyPrefix: string;
  label: string;
  /**
   * The scopes the key was issued with, as issued (a scope a newer build added is kept, and grants nothing
   * here); absent or empty for a key issued before keys had scopes. What it may do: effectiveScopes of them.
   */
  scopes?: string[];
  issuedAt: string;
  revokedAt?: string;
  /** When the key stops working (a rolled key's overlap): refused from then on. */
  expiresAt?: string;
  /** The key this one was rolled from. */
  rolledFrom?: string;
}

/** The longest overlap a rolled key may keep working for: 7 days. */
export const MAX_ROLL_OVERLAP_SECONDS = 7 * 24 * 3600;

/** Whether a key works at `at` (an ISO time): not revoked, and not past its end. */
export const keyWorks = (key: ApiKeyRecord, at: string): boolean =>
  !key.revokedAt && (!key.expiresAt || Date.parse(key.expiresAt) > Date.parse(at));

export interface BotRecord {
  botId: string;
  messenger: MessengerName;
  name: string;
  token: SealedSecret;
  providerBotId: string;
  username: string;
  registeredAt: string;
}

/** Everything the registry knows about one company: the fold of its account events. */
export interface AccountState {
  companyId: string;
  name: string;
  createdAt: string;
  apiKeys: Record<string, ApiKeyRecord>;
  /** 0 to MAX_WEBHOOK_ENDPOINTS: ep_default (the single URL of older versions) first, then in the order added. */
  webhookEndpoints: WebhookEndpointRecord[];
  bots: Record<string, BotRecord>;
  defaultBots: Partial<Record<MessengerName, string>>;
}

export type AccountEventCase = NonNullable<AccountEvent['event']>;
/** An account event as the domain sees it: the payload and when it happened. */
export interface DatedAccountEvent {
  at: string;
  event: AccountEventCase;
}

export type AccountCommand =
  | { type: 'CreateCompany'; name: string }
  | {
      type: 'IssueApiKey';
      keyId: string;
      keyHash: string;
      keyPrefix: string;
      label: string;
      scopes: readonly ApiKeyScope[];
    }
  | { type: 'RevokeApiKey'; keyId: string }
  /**
   * A new key (`newKeyId`, same label and scopes) in place of `keyId`, which works until `expiresAt` (unset or
   * not after `now`: ends at once, as revoked). An old key already ending sooner keeps its end.
   */
  | {
      type: 'RollApiKey';
      keyId: string;
      newKeyId: string;
      keyHash: string;
      keyPrefix: string;
      now: string;
      expiresAt?: string;
    }
  | WebhookCommand
  | {
      type: 'RegisterBot';
      botId: string;
      messenger: MessengerName;
      name: string;
      token: SealedSecret;
      providerBotId: string;
      username: string;
      makeDefault: boolean;
    }
  | { type: 'RemoveBot'; botId: string }
  | { type: 'ChooseDefaultBot'; botId: string }
  /** The secrets sealed again (under the current key, bound to their owners), by bot id and secret id. */
  | {
      type: 'ResealSecrets';
      botTokens: Record<string, SealedSecret>;
      webhookSecrets: Record<string, SealedSecret>;
    };

/** The name of a messenger's code in an event or a request; an unknown code is a bug, not a bad request. */
export function messengerName(code: number): MessengerName {
  const name = messengerNameOf(code);
  if (name === undefined) throw new Error(`unknown messenger ${code}`);
  return name;
}

export function activeBots(state: AccountState, messenger?: MessengerName): BotRecord[] {
  return Object.values(state.bots).filter((b) => !messenger || b.messenger === messenger);
}

/** Decides what a command on an existing company does; CreateCompany is decided by `decideCreate`. */
export function decideAccount(command: AccountCommand, state: AccountState): AccountEventCase[] {
  switch (command.type) {
    case 'CreateCompany':
      throw new DomainError('COMPANY_EXISTS', `company ${state.companyId} already exists`);
    case 'IssueApiKey':
      if (command.scopes.length === 0)
        throw new DomainError('NO_SCOPES', 'an API key needs at least one scope');
      return [
        {
          $case: 'apiKeyIssued',
          value: {
            keyId: command.keyId,
            keyHash: command.keyHash,
            keyPrefix: command.keyPrefix,
            label: command.label,
            scopes: [...new Set(command.scopes)],
            rolledFrom: '',
          },
        },
      ];
    case 'RevokeApiKey': {
      const key = state.apiKeys[command.keyId];
      if (!key) throw new DomainError('API_KEY_NOT_FOUND', `no API key ${command.keyId}`);
      return key.revokedAt ? [] : [{ $case: 'apiKeyRevoked', value: { keyId: command.keyId } }];
    }
    case 'RollApiKey':
      return decideRoll(command, state);
    case 'ConfigureWebhook':
    case 'AddWebhookEndpoint':
    case 'ChangeWebhookEndpoint':
    case 'RemoveWebhookEndpoint':
    case 'RotateWebhookSecret':
    case 'DisableWebhook':
    case 'EnableWebhook':
      return decideWebhook(command, state.webhookEndpoints);
    case 'RegisterBot': {
      const sameName = activeBots(state, command.messenger).find((b) => b.name === command.name);
      if (sameName)
        throw new DomainError(
          'BOT_NAME_TAKEN',
          `the company already has a ${command.messenger} bot named ${command.name}`,
        );
      const events: AccountEventCase[] = [
        {
          $case: 'botRegistered',
          value: {
            botId: command.botId,
            messenger: messengerCode(command.messenger),
            name: command.name,
            token: sealed(command.token),
            providerBotId: command.providerBotId,
            username: command.username,
          },
        },
      ];
      // The first bot of a messenger becomes its default; later ones only when asked.
      if (command.makeDefault || !state.defaultBots[command.messenger]) {
        events.push({
          $case: 'defaultBotChosen',
          value: { messenger: messengerCode(command.messenger), botId: command.botId },
        });
      }
      return events;
    }
    case 'RemoveBot':
      if (!state.bots[command.botId]) throw new DomainError('BOT_NOT_FOUND', `no bot ${command.botId}`);
      return [{ $case: 'botRemoved', value: { botId: command.botId } }];
    case 'ChooseDefaultBot': {
      const bot = state.bots[command.botId];
      if (!bot) throw new DomainError('BOT_NOT_FOUND', `no bot ${command.botId}`);
      if (state.defaultBots[bot.messenger] === bot.botId) return [];
      return [
        { $case: 'defaultBotChosen', value: { messenger: messengerCode(bot.messenger), botId: bot.botId } },
      ];
    }
    case 'ResealSecrets':
      return decideReseal(command, state);
  }
}

function decideRoll(
  command: Extract<AccountCommand, { type: 'RollApiKey' }>,
  state: AccountState,
): AccountEventCase[] {
  const key = state.apiKeys[command.keyId];
  if (!key) throw new DomainError('API_KEY_NOT_FOUND', `no API key ${command.keyId}`);
  if (!keyWorks(key, command.now))
    throw new DomainError('API_KEY_ENDED', `API key ${command.keyId} is revoked or expired: issue a new one`);
  const issued: AccountEventCase = {
    $case: 'apiKeyIssued',
    value: {
      keyId: command.newKeyId,
      keyHash: command.keyHash,
      keyPrefix: command.keyPrefix,
      label: key.label,
      scopes: [...(key.scopes ?? [])],
      rolledFrom: key.keyId,
    },
  };
  const wanted = command.expiresAt && command.expiresAt > command.now ? command.expiresAt : undefined;
  if (!wanted) return [issued, { $case: 'apiKeyRevoked', value: { keyId: key.keyId } }];
  const end = key.expiresAt && key.expiresAt < wanted ? key.expiresAt : wanted;
  return [issued, { $case: 'apiKeyExpiryScheduled', value: { keyId: key.keyId, expiresAt: new Date(end) } }];
}

function decideReseal(
  command: Extract<AccountCommand, { type: 'ResealSecrets' }>,
  state: AccountState,
): AccountEventCase[] {
  const botTokens = Object.entries(command.botTokens)
    .filter(([botId]) => state.bots[botId])
    .map(([botId, token]) => ({ botId, token: sealed(token) }));
  const known = new Set(allWebhookSecrets(state.webhookEndpoints).map((s) => s.secretId));
  const webhookSecrets = Object.entries(command.webhookSecrets)
    .filter(([secretId]) => known.has(secretId))
    .map(([secretId, secret]) => ({ secretId, secret: sealed(secret) }));
  if (botTokens.length === 0 && webhookSecrets.length === 0) return [];
  return [{ $case: 'secretsResealed', value: { botTokens, webhookSecrets } }];
}

export function decideCreate(command: { name: string }): AccountEventCase[] {
  const name = command.name.trim();
  if (!name) throw new DomainError('INVALID_NAME', 'a company needs a name');
  return [{ $case: 'companyCreated', value: { name } }];
}

/** The account after one more event. Pure: the same fold serves live updates and rebuilds. */
export function evolveAccount(
  state: AccountState | undefined,
  companyId: string,
  dated: DatedAccountEvent,
): AccountState {
  const { at, event } = dated;
  if (event.$case === 'companyCreated') {
    return {
      companyId,
      name: event.value.name,
      createdAt: at,
      apiKeys: {},
      webhookEndpoints: [],
      bots: {},
      defaultBots: {},
    };
  }
  if (!state) throw new Error(`account event ${event.$case} before CompanyCreated for ${companyId}`);
  switch (event.$case) {
    case 'apiKeyIssued': {
      const { keyId, keyHash, keyPrefix, label, rolledFrom } = event.value;
      // Kept as issued: a key issued before scopes existed names none (effectiveScopes gives it the legacy
      // default), and one naming only scopes this build does not know gets none of them.
      const scopes = [...event.value.scopes];
      const key: ApiKeyRecord = {
        keyId,
        keyHash,
        keyPrefix,
        label,
        scopes,
        issuedAt: at,
        ...(rolledFrom ? { rolledFrom } : {}),
      };
      return { ...state, apiKeys: { ...state.apiKeys, [keyId]: key } };
    }
    case 'apiKeyExpiryScheduled': {
      const key = state.apiKeys[event.value.keyId];
      if (!key || !event.value.expiresAt) return state;
      const expiresAt = event.value.expiresAt.toISOString();
      return { ...state, apiKeys: { ...state.apiKeys, [key.keyId]: { ...key, expiresAt } } };
    }
    case 'apiKeyRevoked': {
      const key = state.apiKeys[event.value.keyId];
      if (!key) return state;
      return { ...state, apiKeys: { ...state.apiKeys, [key.keyId]: { ...key, revokedAt: at } } };
    }
    case 'webhookEndpointConfigured':
    case 'webhookSecretRotated':
    case 'webhookEndpointDisabled':
    case 'webhookEndpointEnabled':
    case 'webhookEndpointRemoved':
      return { ...state, webhookEndpoints: evolveWebhook(state.webhookEndpoints, event, at) };
    case 'botRegistered': {
      const v = event.value;
      const bot: BotRecord = {
        botId: v.botId,
        messenger: messengerName(v.messenger),
        name: v.name,
        token: unsealed(v.token),
        providerBotId: v.providerBotId,
        username: v.username,
        registeredAt: at,
      };
      return { ...state, bots: { ...state.bots, [bot.botId]: bot } };
    }
    case 'botRemoved': {
      const { [event.value.botId]: removed, ...bots } = state.bots;
      if (!removed) return state;
      const defaultBots = { ...state.defaultBots };
      if (defaultBots[removed.messenger] === removed.botId) delete defaultBots[removed.messenger];
      return { ...state, bots, defaultBots };
    }
    case 'defaultBotChosen':
      return {
        ...state,
        defaultBots: { ...state.defaultBots, [messengerName(event.value.messenger)]: event.value.botId },
      };
    case 'secretsResealed': {
      const bots = { ...state.bots };
      for (const { botId, token } of event.value.botTokens) {
        const bot = bots[botId];
        if (bot) bots[botId] = { ...bot, token: unsealed(token) };
      }
      const resealed = new Map(event.value.webhookSecrets.map((s) => [s.secretId, unsealed(s.secret)]));
      return { ...state, bots, webhookEndpoints: resealedEndpoints(state.webhookEndpoints, resealed) };
    }
  }
}

/** An account command with its time: the time arrives in the command and stays on each event it causes. */
export type DatedAccountCommand = AccountCommand & { at: string };

/**
 * One company's account as a decider (@mds/eventsourcing): a company that does not exist yet can only be
 * created; every other command is decided on the account's state. The fold is evolveAccount, the one that
 * live commands and rebuilds share.
 */
export function accountDecider(
  companyId: string,
): Decider<DatedAccountCommand, DatedAccountEvent, AccountState | undefined> {
  return {
    initialState: () => undefined,
    decide: ({ at, ...command }, state) => {
      let events: AccountEventCase[];
      if (state) events = decideAccount(command, state);
      else if (command.type === 'CreateCompany') events = decideCreate(command);
      else throw new DomainError('COMPANY_NOT_FOUND', `no company ${companyId}`);
      return events.map((event) => ({ at, event }));
    },
    evolve: (state, dated) => evolveAccount(state, companyId, dated),
  };
}
