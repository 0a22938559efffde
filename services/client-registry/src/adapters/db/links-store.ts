import type { BotChat } from '@mds/contracts';
import type { Knex } from '@mds/db';
import type { ClientEventCase, Link } from '../../domain/links.js';
import type { LinkStore } from '../../application/ports.js';

interface LinkRow {
  company_id: string;
  bot_id: string;
  chat_id: string;
  user_id: string;
  messenger: number;
  phone: string;
  reachable: boolean;
  fact_at: Date | null;
}

const toLink = (r: LinkRow): Link => ({
  phone: r.phone,
  reachable: r.reachable,
  factAt: r.fact_at ?? undefined,
  chat: {
    messenger: r.messenger as BotChat['messenger'],
    botId: r.bot_id,
    chatId: r.chat_id,
    userId: r.user_id,
  },
});

const UNREACHABLE_REASONS: Record<number, string> = {
  1: 'blocked',
  2: 'stopped',
  3: 'deactivated',
  4: 'send_rejected',
};

/**
 * The links of a number with when each last changed (linked, or its reachability) and why an unreachable one
 * is unreachable: what the admin API shows of a client.
 */
export async function linksOfPhoneSince(
  db: Knex,
  companyId: string,
  phone: string,
): Promise<(Link & { since: string; unreachableReason: string | null })[]> {
  const rows = await db('client_links')
    .where({ company_id: companyId, phone })
    .orderBy(['bot_id', 'chat_id'])
    .select<(LinkRow & { updated_at: Date; unreachable_reason: number })[]>();
  return rows.map((r) => ({
    ...toLink(r),
    since: r.updated_at.toISOString(),
    unreachableReason: r.reachable ? null : (UNREACHABLE_REASONS[r.unreachable_reason] ?? 'unknown'),
  }));
}

export async function linksOfChat(
  db: Knex,
  companyId: string,
  botId: string,
  chatId: string,
): Promise<Link[]> {
  const rows = await db('client_links')
    .where({ company_id: companyId, bot_id: botId, chat_id: chatId })
    .select<LinkRow[]>();
  return rows.map(toLink);
}

export async function linksOfPhone(db: Knex, companyId: string, phone: string): Promise<Link[]> {
  const rows = await db('client_links')
    .where({ company_id: companyId, phone })
    .orderBy(['bot_id', 'chat_id'])
    .select<LinkRow[]>();
  return rows.map(toLink);
}

/** Links of many (company, phone) pairs in one query, keyed by `${company}/${phone}`. */
export async function linksOfPhones(
  db: Knex,
  pairs: readonly { companyId: string; phone: string }[],
): Promise<Map<string, Link[]>> {
  const out = new Map<string, Link[]>();
  if (pairs.length === 0) return out;
  const rows = await db('client_links')
    .whereIn(
      ['company_id', 'phone'],
      pairs.map((p) => [p.companyId, p.phone]),
    )
    .select<LinkRow[]>();
  for (const row of rows) {
    const key = `${row.company_id}/${row.phone}`;
    const links = out.get(key);
    if (links) links.push(toLink(row));
    else out.set(key, [toLink(row)]);
  }
  return out;
}

/**
 * The projection of one client event: the same function serves live decisions and rebuilds. `at` is when
 * the fact that caused it happened (the event's own time): a later fact about the link must not be older.
 */
export async function applyClientEvent(
  trx: Knex,
  companyId: string,
  event: ClientEventCase,
  at: string,
): Promise<void> {
  switch (event.$case) {
    case 'clientLinked': {
      // Erased (the person was forgotten since): a rebuild restores no link of theirs.
      if (!event.value.phoneNumber) return;
      const chat = event.value.chat!;
      await trx('client_links')
        .insert({
          company_id: companyId,
          bot_id: chat.botId,
          chat_id: chat.chatId,
          user_id: chat.userId,
          messenger: chat.messenger,
          phone: event.value.phoneNumber,
          reachable: true,
          unreachable_reason: 0,
          updated_at: at,
          fact_at: at,
        })
        .onConflict(['company_id', 'bot_id', 'chat_id'])
        .merge();
      return;
    }
    case 'clientUnlinked': {
      const chat = event.value.chat!;
      await trx('client_links')
        .where({
          company_id: companyId,
          bot_id: chat.botId,
          chat_id: chat.chatId,
          phone: event.value.phoneNumber,
        })
        .delete();
      return;
    }
    case 'clientLinkReachabilityChanged': {
      const chat = event.value.chat!;
      await trx('client_links')
        .where({
          company_id: companyId,
          bot_id: chat.botId,
          chat_id: chat.chatId,
          phone: event.value.phoneNumber,
        })
        .update({
          reachable: event.value.reachable,
          unreachable_reason: event.value.reason,
          updated_at: at,
          fact_at: at,
        });
      return;
    }
    case 'clientPhoneChanged':
      await trx('client_links')
        .where({ company_id: companyId, phone: event.value.oldPhone })
        .update({ phone: event.value.newPhone, updated_at: at });
      return;
    case 'clientForgotten':
      // The forget itself removed the links (by number, which this event does not carry); a rebuild never
      // restores them: their ClientLinked events open as erased.
      return;
  }
}

/** The link store the application uses (application/ports.ts). */
export const linkStore: LinkStore = {
  linksOfChat,
  linksOfPhone,
  applyClientEvent,
  removeLinksOfPhone: (trx, companyId, phone) =>
    trx('client_links').where({ company_id: companyId, phone }).delete(),
};
