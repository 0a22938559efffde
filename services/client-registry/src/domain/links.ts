import {
  messengerCode,
  type BotChat,
  type ClientEvent,
  type FallbackRoute,
  type ClientRequestEvent,
  type UnreachableReason,
} from '@mds/contracts';
import {
  messageErrorCodes,
  phoneChangeErrorCodes,
  type MessageErrorCode,
  type PhoneChangeErrorCode,
} from '@mds/contracts';
import type { AccountState, BotRecord, MessengerName } from './accounts.js';

/** A person's chat with one bot, verified to belong to a phone number of the company. */
export interface Link {
  phone: string;
  chat: BotChat;
  reachable: boolean;
  /** When the last fact about the chat that changed the link happened (a start, a block, a shared contact). */
  factAt?: Date | undefined;
}

export type ClientEventCase = NonNullable<ClientEvent['event']>;

/** What a bot update means for the company's links; `at` is when it happened. */
export type BotUpdate = { at?: Date | undefined } & (
  | { kind: 'started'; chat: BotChat }
  | { kind: 'contactShared'; chat: BotChat; phone: string }
  | { kind: 'blocked'; chat: BotChat; reason: UnreachableReason }
  | { kind: 'unblocked'; chat: BotChat }
);

/**
 * A fact older than the last one that changed the link tells nothing new (an update read twice, a refused
 * send's block republished after a later start): the link keeps its newer state.
 */
const isNewerThan = (update: BotUpdate) => (link: Link) =>
  !update.at || !link.factAt || update.at.getTime() >= link.factAt.getTime();

const sameChat = (a: BotChat, b: BotChat) => a.botId === b.botId && a.chatId === b.chatId;

/**
 * The link events a bot update causes, given the links of that bot chat and the links of the shared
 * phone number on that bot. A contact verified on a bot chat binds the number to that chat: if the chat
 * was bound to another number, that link goes; if the number was bound to another account of the same bot,
 * the latest verified contact wins and the older link goes.
 */
export function decideBotUpdate(
  update: BotUpdate,
  view: { linksOfChat: Link[]; linksOfPhoneOnBot: Link[] },
): ClientEventCase[] {
  switch (update.kind) {
    case 'contactShared': {
      const events: ClientEventCase[] = [];
      const already = view.linksOfChat.find((l) => l.phone === update.phone);
      for (const link of view.linksOfChat.filter((l) => l.phone !== update.phone)) {
        events.push({
          $case: 'clientUnlinked',
          value: {
            phoneNumber: link.phone,
            chat: link.chat,
            reason: 'the chat verified another phone number',
          },
        });
      }
      for (const link of view.linksOfPhoneOnBot.filter((l) => !sameChat(l.chat, update.chat))) {
        events.push({
          $case: 'clientUnlinked',
          value: {
            phoneNumber: link.phone,
            chat: link.chat,
            reason: 'the number was verified by another account',
          },
        });
      }
      if (!already)
        events.push({ $case: 'clientLinked', value: { phoneNumber: update.phone, chat: update.chat } });
      else if (!already.reachable) events.push(reachability(already, true, 0));
      return events;
    }
    case 'started':
    case 'unblocked':
      // Starting the bot again (Telegram /start after a block, MAX bot_started) makes the chat reachable.
      return view.linksOfChat
        .filter((l) => !l.reachable && isNewerThan(update)(l))
        .map((l) => reachability(l, true, 0));
    case 'blocked':
      return view.linksOfChat
        .filter((l) => l.reachable && isNewerThan(update)(l))
        .map((l) => reachability(l, false, update.reason));
  }
}

function reachability(link: Link, reachable: boolean, reason: UnreachableReason): ClientEventCase {
  return {
    $case: 'clientLinkReachabilityChanged',
    value: { phoneNumber: link.phone, chat: link.chat, reachable, reason },
  };
}

export type ClientRequestOutcome = NonNullable<ClientRequestEvent['event']>;

function rejected(code: PhoneChangeErrorCode): ClientRequestOutcome {
  return {
    $case: 'phoneChangeRejected',
    value: { errorCode: code, errorDescription: phoneChangeErrorCodes[code] },
  };
}

/** change_phone: every link of the old number moves to the new one, or the request is refused with a code. */
export function decidePhoneChange(
  command: { oldPhone: string; newPhone: string; requestId: string },
  view: { linksOfOld: Link[]; linksOfNew: Link[] },
): { links: ClientEventCase[]; outcome: ClientRequestOutcome } {
  // Erased (the old number's person was forgotten since it was asked): there is nothing of theirs to move.
  if (!command.oldPhone) return { links: [], outcome: rejected('OLD_PHONE_NOT_FOUND') };
  if (command.oldPhone === command.newPhone) return { links: [], outcome: rejected('SAME_PHONE') };
  if (view.linksOfOld.length === 0) return { links: [], outcome: rejected('OLD_PHONE_NOT_FOUND') };
  if (view.linksOfNew.length > 0) return { links: [], outcome: rejected('NEW_PHONE_IN_USE') };
  return {
    links: [
      {
        $case: 'clientPhoneChanged',
        value: { oldPhone: command.oldPhone, newPhone: command.newPhone, requestId: command.requestId },
      },
    ],
    outcome: {
      $case: 'phoneChanged',
      value: { oldPhone: command.oldPhone, newPhone: command.newPhone, linksMoved: view.linksOfOld.length },
    },
  };
}

/** client/check: does the number exist in the company, and which bots can reach it. */
export function checkClient(phone: string, links: Link[], account: AccountState): ClientRequestOutcome {
  const bots = links.flatMap((link) => {
    const bot = account.bots[link.chat.botId];
    return bot
      ? [{ messenger: messengerCode(bot.messenger), botName: bot.name, reachable: link.reachable }]
      : [];
  });
  return { $case: 'clientChecked', value: { phoneNumber: phone, exists: bots.length > 0, bots } };
}

export type Route =
  | { routed: true; bot: BotRecord; link: Link }
  /** `bot`: the one it was for, when found (a fallback's attempt names it). */
  | { routed: false; errorCode: MessageErrorCode; errorDescription: string; bot?: BotRecord };

function failed(errorCode: MessageErrorCode, detail?: string, bot?: BotRecord): Route {
  return {
    routed: false,
    errorCode,
    errorDescription: detail ?? messageErrorCodes[errorCode],
    ...(bot ? { bot } : {}),
  };
}

/**
 * Which bot and chat a message goes to: the named bot (or the messenger's default) and the client's chat with it.
 * A message past its expiry (ttl_seconds) goes nowhere: routed late (the registry was down), it is never sent.
 */
export function route(
  request: { messenger: MessengerName; botName: string; expired?: boolean },
  account: AccountState,
  linksOfPhone: Link[],
): Route {
  if (request.expired) return failed('EXPIRED');
  const bots = Object.values(account.bots).filter((b) => b.messenger === request.messenger);
  const bot = request.botName
    ? bots.find((b) => b.name === request.botName)
    : bots.find((b) => b.botId === account.defaultBots[request.messenger]);
  if (!bot) {
    return request.botName
      ? failed('UNKNOWN_BOT', `the company has no ${request.messenger} bot named "${request.botName}"`)
      : failed(
          'NO_DEFAULT_BOT',
          `the company has no default ${request.messenger} bot; name one with bot_name`,
        );
  }
  if (linksOfPhone.length === 0) return failed('CLIENT_NOT_FOUND', undefined, bot);
  const link = linksOfPhone.find((l) => l.chat.botId === bot.botId);
  if (!link)
    return failed(
      'CLIENT_NOT_LINKED_TO_BOT',
      `the client has not started the bot "${bot.name}" and shared their contact with it`,
      bot,
    );
  if (!link.reachable) return failed('BOT_BLOCKED_BY_USER', undefined, bot);
  return { routed: true, bot, link };
}

/** A channel's route as its work order names it: the bot it was routed to, by name. */
export const resolved = (route: FallbackRoute, botName: string): FallbackRoute => ({
  ...route,
  current: { messenger: route.current?.messenger ?? 0, botName },
});
