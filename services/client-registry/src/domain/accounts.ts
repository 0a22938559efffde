import { DomainError, type Decider } from '@mds/eventsourcing';
import { MESSENGER_CODE, messengerNameOf, type AccountEvent, type MessengerName } from '@mds/contracts';
import type { ApiKeyScope } from '@mds/contracts/api-keys';

export type { MessengerName };

/** A secret sealed with AES-256-GCM, as stored in the account document (base64 fields). */
export interface SealedSecret {
  keyId: string;
  nonce: string;
  ciphertext: string;
  /** 1: bound to its owner by associated data; absent or 0: sealed before owners were bound. */
  format?: number;
}

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
}

export interface WebhookSecretRecord {
  secretId: string;
  secret: SealedSecret;
  createdAt: string;
  /** Set once rotated out: it keeps signing until then. */
  expiresAt?: string;
}

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
  webhook?: { url: string; enabled: boolean; disabledReason?: string; secrets: WebhookSecretRecord[] };
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
  | { type: 'ConfigureWebhook'; url: string; newSecret: { secretId: string; secret: SealedSecret } }
  | { type: 'RotateWebhookSecret'; secretId: string; secret: SealedSecret; previousExpiresAt: string }
  | { type: 'DisableWebhook'; reason: string }
  | { type: 'EnableWebhook' }
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

const sealed = (s: SealedSecret) => ({
  keyId: s.keyId,
  nonce: Buffer.from(s.nonce, 'base64'),
  ciphertext: Buffer.from(s.ciphertext, 'base64'),
  format: s.format ?? 0,
});
const unsealed = (
  s: { keyId: string; nonce: Buffer; ciphertext: Buffer; format?: number } | undefined,
): SealedSecret => ({
  keyId: s?.keyId ?? '',
  nonce: Buffer.from(s?.nonce ?? []).toString('base64'),
  ciphertext: Buffer.from(s?.ciphertext ?? []).toString('base64'),
  ...(s?.format ? { format: s.format } : {}),
});

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
          },
        },
      ];
    case 'RevokeApiKey': {
      const key = state.apiKeys[command.keyId];
      if (!key) throw new DomainError('API_KEY_NOT_FOUND', `no API key ${command.keyId}`);
      return key.revokedAt ? [] : [{ $case: 'apiKeyRevoked', value: { keyId: command.keyId } }];
    }
    case 'ConfigureWebhook': {
      // A new URL keeps the current signing secret; the first configuration gets one.
      const current = state.webhook?.secrets.find((s) => !s.expiresAt);
      const secret = current ?? { ...command.newSecret, createdAt: '' };
      if (state.webhook?.url === command.url && current) return [];
      return [
        {
          $case: 'webhookEndpointConfigured',
          value: { url: command.url, secretId: secret.secretId, secret: sealed(secret.secret) },
        },
      ];
    }
    case 'RotateWebhookSecret': {
      const current = state.webhook?.secrets.find((s) => !s.expiresAt);
      if (!state.webhook || !current)
        throw new DomainError('WEBHOOK_NOT_CONFIGURED', 'the company has no webhook endpoint');
      return [
        {
          $case: 'webhookSecretRotated',
          value: {
            secretId: command.secretId,
            secret: sealed(command.secret),
            previousSecretId: current.secretId,
            previousSecretExpiresAt: new Date(command.previousExpiresAt),
          },
        },
      ];
    }
    case 'DisableWebhook':
      if (!state.webhook)
        throw new DomainError('WEBHOOK_NOT_CONFIGURED', 'the company has no webhook endpoint');
      return state.webhook.enabled
        ? [{ $case: 'webhookEndpointDisabled', value: { reason: command.reason } }]
        : [];
    case 'EnableWebhook':
      if (!state.webhook)
        throw new DomainError('WEBHOOK_NOT_CONFIGURED', 'the company has no webhook endpoint');
      return state.webhook.enabled ? [] : [{ $case: 'webhookEndpointEnabled', value: {} }];
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
            messenger: MESSENGER_CODE[command.messenger],
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
          value: { messenger: MESSENGER_CODE[command.messenger], botId: command.botId },
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
        { $case: 'defaultBotChosen', value: { messenger: MESSENGER_CODE[bot.messenger], botId: bot.botId } },
      ];
    }
    case 'ResealSecrets':
      return decideReseal(command, state);
  }
}

function decideReseal(
  command: Extract<AccountCommand, { type: 'ResealSecrets' }>,
  state: AccountState,
): AccountEventCase[] {
  const botTokens = Object.entries(command.botTokens)
    .filter(([botId]) => state.bots[botId])
    .map(([botId, token]) => ({ botId, token: sealed(token) }));
  const known = new Set(state.webhook?.secrets.map((s) => s.secretId));
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
    return { companyId, name: event.value.name, createdAt: at, apiKeys: {}, bots: {}, defaultBots: {} };
  }
  if (!state) throw new Error(`account event ${event.$case} before CompanyCreated for ${companyId}`);
  switch (event.$case) {
    case 'apiKeyIssued': {
      const { keyId, keyHash, keyPrefix, label } = event.value;
      // Kept as issued: a key issued before scopes existed names none (effectiveScopes gives it the legacy
      // default), and one naming only scopes this build does not know gets none of them.
      const scopes = [...event.value.scopes];
      return {
        ...state,
        apiKeys: { ...state.apiKeys, [keyId]: { keyId, keyHash, keyPrefix, label, scopes, issuedAt: at } },
      };
    }
    case 'apiKeyRevoked': {
      const key = state.apiKeys[event.value.keyId];
      if (!key) return state;
      return { ...state, apiKeys: { ...state.apiKeys, [key.keyId]: { ...key, revokedAt: at } } };
    }
    case 'webhookEndpointConfigured': {
      const secrets = state.webhook?.secrets.some((s) => s.secretId === event.value.secretId)
        ? state.webhook.secrets
        : [{ secretId: event.value.secretId, secret: unsealed(event.value.secret), createdAt: at }];
      return {
        ...state,
        webhook: { url: event.value.url, enabled: state.webhook?.enabled ?? true, secrets },
      };
    }
    case 'webhookSecretRotated': {
      if (!state.webhook) return state;
      const expiresAt = event.value.previousSecretExpiresAt?.toISOString() ?? at;
      const kept = state.webhook.secrets
        .map((s) => (s.secretId === event.value.previousSecretId ? { ...s, expiresAt } : s))
        // Secrets that expired by now are gone for good.
        .filter((s) => !s.expiresAt || s.expiresAt > at);
      return {
        ...state,
        webhook: {
          ...state.webhook,
          secrets: [
            ...kept,
            { secretId: event.value.secretId, secret: unsealed(event.value.secret), createdAt: at },
          ],
        },
      };
    }
    case 'webhookEndpointDisabled':
      return state.webhook
        ? { ...state, webhook: { ...state.webhook, enabled: false, disabledReason: event.value.reason } }
        : state;
    case 'webhookEndpointEnabled': {
      if (!state.webhook) return state;
      const { disabledReason: _gone, ...webhook } = state.webhook;
      return { ...state, webhook: { ...webhook, enabled: true } };
    }
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
      const webhook = state.webhook && {
        ...state.webhook,
        secrets: state.webhook.secrets.map((s) => {
          const secret = resealed.get(s.secretId);
          return secret ? { ...s, secret } : s;
        }),
      };
      return { ...state, bots, ...(webhook ? { webhook } : {}) };
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
