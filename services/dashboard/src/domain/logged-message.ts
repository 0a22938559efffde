import { apply, newLifecycle, type Lifecycle } from '@mds/message-state';
import type { Change, ProjectedEvent } from './projection.js';

/**
 * A message as the log keeps it (its row). Its lifecycle (state, outcome, messenger, bot, times) is what
 * `@mds/message-state` folds from its events, by the same rules as the read API's (the first outcome
 * decides it); the row adds what the pages show besides: the number, the text, the key, where it was
 * routed, and the time it sorts by.
 */
export interface LoggedMessage {
  messageId: string;
  companyId: string;
  lifecycle: Lifecycle<Date>;
  phone: string | null;
  text: string | null;
  apiKeyId: string | null;
  chatId: string | null;
  routedAt: Date | null;
  /** accepted_at, or the first event's time while the acceptance is not in the log (trimmed history). */
  sortAt: Date;
}

/** An event that changes a message's row: its acceptance, its routing, a send or a failure. */
export type LoggedMessageEvent = ProjectedEvent & {
  change: Extract<Change, { kind: 'accepted' | 'routed' | 'outcome' }>;
};

export const changesLoggedMessage = (e: ProjectedEvent): e is LoggedMessageEvent =>
  e.change.kind === 'accepted' || e.change.kind === 'routed' || e.change.kind === 'outcome';

/** The row's key: the message's id as PostgreSQL writes a uuid. */
export const messageKey = (e: ProjectedEvent): string => e.subjectId.toLowerCase();

const sameTime = (date: Date): Date => date;

/**
 * The row of a message first named by `e`, before `e` is applied: new, nothing known yet. An outcome or a
 * routing read before its acceptance (another topic, or trimmed history) has somewhere to go; the
 * acceptance fills in the rest when it comes.
 */
export function newLoggedMessage(e: ProjectedEvent): LoggedMessage {
  return {
    messageId: messageKey(e),
    companyId: e.companyId,
    lifecycle: newLifecycle('message', e.at),
    phone: null,
    text: null,
    apiKeyId: null,
    chatId: null,
    routedAt: null,
    sortAt: e.at,
  };
}

/**
 * Applies one event to a message's row; returns the row after it (a new object, `row` is left as it was).
 * The lifecycle follows @mds/message-state's `apply`: an acceptance whenever it comes, an outcome only while
 * the message is still new. The first routing decides where it went (a bot the outcome named stays).
 */
export function evolveLoggedMessage(row: LoggedMessage, e: LoggedMessageEvent): LoggedMessage {
  const next: LoggedMessage = { ...row, lifecycle: { ...row.lifecycle } };
  const change = e.change;
  switch (change.kind) {
    case 'accepted':
      apply(next.lifecycle, change.record, e.at, sameTime);
      next.phone = change.phone;
      next.text = change.text || null;
      next.apiKeyId = change.apiKeyId;
      next.sortAt = e.at;
      return next;
    case 'outcome':
      apply(next.lifecycle, change.record, e.at, sameTime);
      return next;
    case 'routed':
      if (next.routedAt !== null) return row;
      next.lifecycle.botId ??= change.botId || null;
      next.chatId = change.chatId;
      next.routedAt = e.at;
      return next;
  }
}

/**
 * Folds a batch of events (in log order) into the rows of their messages: `rows` holds the rows as they
 * were (a message without one starts new), the answer every row the batch touched, after it.
 */
export function foldLoggedMessages(
  rows: ReadonlyMap<string, LoggedMessage>,
  events: readonly LoggedMessageEvent[],
): Map<string, LoggedMessage> {
  const after = new Map<string, LoggedMessage>();
  for (const e of events) {
    const key = messageKey(e);
    const row = after.get(key) ?? rows.get(key) ?? newLoggedMessage(e);
    after.set(key, evolveLoggedMessage(row, e));
  }
  return after;
}

/** Whether the batch decided the message: it was new before, and has its outcome after. */
export const decidedBy = (before: LoggedMessage | undefined, after: LoggedMessage): boolean =>
  (before?.lifecycle.status ?? 'new') === 'new' && after.lifecycle.status !== 'new';
