import type { CleanText } from '@mds/contracts';
import type { Knex } from '@mds/db';
import type { AccountState, MessengerName } from '../domain/accounts.js';
import type { ClientEventCase, Link } from '../domain/links.js';

/**
 * What the registry's use cases need from the outside world, declared here and implemented by adapters/
 * (the database stores, the messengers' HTTP APIs). Decisions run inside a database transaction the use
 * case opens, so the store operations take the transaction (or the database) they run in.
 */

/** The stored account documents, one per company, and the locks that serialise decisions about them. */
export interface AccountStore {
  /** Serialises decisions about one company across every replica until the transaction ends. */
  lockCompany(trx: Knex.Transaction, companyId: string): Promise<void>;
  /** Takes the companies' locks in one order, so that two transactions locking several never wait in a circle. */
  lockCompanies(trx: Knex.Transaction, companyIds: readonly string[]): Promise<void>;
  loadAccount(db: Knex, companyId: string): Promise<AccountState | undefined>;
  listAccounts(db: Knex): Promise<AccountState[]>;
  saveAccount(trx: Knex.Transaction, state: AccountState, at: string): Promise<void>;
  companyOfBot(db: Knex, botId: string): Promise<string | undefined>;
  /** The company that registered this messenger bot, if any. */
  botOwner(db: Knex, messenger: string, providerBotId: string): Promise<string | undefined>;
}

/** The links between people's chats and their numbers, kept by applying client events. */
export interface LinkStore {
  linksOfChat(db: Knex, companyId: string, botId: string, chatId: string): Promise<Link[]>;
  linksOfPhone(db: Knex, companyId: string, phone: string): Promise<Link[]>;
  applyClientEvent(trx: Knex, companyId: string, event: ClientEventCase, at: string): Promise<void>;
  /** Removes every link of the number in the company; how many there were. */
  removeLinksOfPhone(trx: Knex, companyId: string, phone: string): Promise<number>;
}

/** Destroys a person's keys of one company; the count destroyed. */
export type PersonKeyDestroyer = (trx: Knex, companyId: string, subjectId: string) => Promise<number>;

/** Who a bot is, as its messenger answered: outside text, cleaned (@mds/contracts) before it is stored or evented. */
export interface BotIdentity {
  providerBotId: CleanText;
  username: CleanText;
}

export type TokenCheck =
  { ok: true; bot: BotIdentity } | { ok: false; reason: 'rejected' | 'unreachable'; detail: CleanText };

/** Asks the messenger who a bot token belongs to (Telegram getMe, MAX GET /me). */
export type BotTokenChecker = (messenger: MessengerName, token: string) => Promise<TokenCheck>;
