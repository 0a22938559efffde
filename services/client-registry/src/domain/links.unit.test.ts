import { describe, expect, it } from 'vitest';
import { Messenger, type BotChat } from '@mds/contracts';
import type { AccountState } from './accounts.js';
import { checkClient, decideBotUpdate, decidePhoneChange, resolved, route, type Link } from './links.js';

const chat = (botId: string, chatId: string): BotChat => ({ messenger: 1, botId, chatId, userId: chatId });
const link = (phone: string, c: BotChat, reachable = true): Link => ({ phone, chat: c, reachable });
const secret = { keyId: 'k', nonce: '', ciphertext: '' };
const account: AccountState = {
  companyId: 'c',
  name: 'Acme',
  createdAt: '',
  apiKeys: {},
  webhookEndpoints: [],
  bots: {
    tg1: {
      botId: 'tg1',
      messenger: 'telegram',
      name: 'shop',
      token: secret,
      providerBotId: '1',
      username: 'shop_bot',
      registeredAt: '',
    },
    tg2: {
      botId: 'tg2',
      messenger: 'telegram',
      name: 'news',
      token: secret,
      providerBotId: '2',
      username: 'news_bot',
      registeredAt: '',
    },
    mx1: {
      botId: 'mx1',
      messenger: 'max',
      name: 'maxshop',
      token: secret,
      providerBotId: '3',
      username: 'maxshop',
      registeredAt: '',
    },
  },
  defaultBots: { telegram: 'tg1' },
};

describe('a shared contact', () => {
  it('links the number to the chat', () => {
    expect(
      decideBotUpdate(
        { kind: 'contactShared', chat: chat('tg1', '100'), phone: '79123456789' },
        { linksOfChat: [], linksOfPhoneOnBot: [] },
      ),
    ).toEqual([{ $case: 'clientLinked', value: { phoneNumber: '79123456789', chat: chat('tg1', '100') } }]);
  });

  it('shared again changes nothing, or makes an unreachable link reachable', () => {
    const existing = link('79123456789', chat('tg1', '100'));
    expect(
      decideBotUpdate(
        { kind: 'contactShared', chat: existing.chat, phone: existing.phone },
        { linksOfChat: [existing], linksOfPhoneOnBot: [existing] },
      ),
    ).toEqual([]);
    const blocked = { ...existing, reachable: false };
    expect(
      decideBotUpdate(
        { kind: 'contactShared', chat: existing.chat, phone: existing.phone },
        { linksOfChat: [blocked], linksOfPhoneOnBot: [blocked] },
      ),
    ).toEqual([
      {
        $case: 'clientLinkReachabilityChanged',
        value: { phoneNumber: existing.phone, chat: existing.chat, reachable: true, reason: 0 },
      },
    ]);
  });

  it('from another account of the same bot wins: the latest verified contact owns the number', () => {
    const old = link('79123456789', chat('tg1', '100'));
    const events = decideBotUpdate(
      { kind: 'contactShared', chat: chat('tg1', '200'), phone: '79123456789' },
      { linksOfChat: [], linksOfPhoneOnBot: [old] },
    );
    expect(events.map((e) => e.$case)).toEqual(['clientUnlinked', 'clientLinked']);
    expect(events[0]!.value).toMatchObject({
      chat: old.chat,
      reason: 'the number was verified by another account',
    });
  });

  it('of a new number on a chat moves the chat to the new number', () => {
    const old = link('79123456789', chat('tg1', '100'));
    const events = decideBotUpdate(
      { kind: 'contactShared', chat: old.chat, phone: '79876543210' },
      { linksOfChat: [old], linksOfPhoneOnBot: [] },
    );
    expect(events).toEqual([
      {
        $case: 'clientUnlinked',
        value: {
          phoneNumber: '79123456789',
          chat: old.chat,
          reason: 'the chat verified another phone number',
        },
      },
      { $case: 'clientLinked', value: { phoneNumber: '79876543210', chat: old.chat } },
    ]);
  });
});

describe('blocking and unblocking', () => {
  const linked = link('79123456789', chat('tg1', '100'));

  it('a block makes the link unreachable once; start or unblock makes it reachable again', () => {
    const blocked = decideBotUpdate(
      { kind: 'blocked', chat: linked.chat, reason: 1 },
      { linksOfChat: [linked], linksOfPhoneOnBot: [] },
    );
    expect(blocked).toEqual([
      {
        $case: 'clientLinkReachabilityChanged',
        value: { phoneNumber: linked.phone, chat: linked.chat, reachable: false, reason: 1 },
      },
    ]);
    const unreachable = { ...linked, reachable: false };
    expect(
      decideBotUpdate(
        { kind: 'blocked', chat: linked.chat, reason: 1 },
        { linksOfChat: [unreachable], linksOfPhoneOnBot: [] },
      ),
    ).toEqual([]);
    for (const kind of ['unblocked', 'started'] as const) {
      expect(
        decideBotUpdate({ kind, chat: linked.chat }, { linksOfChat: [unreachable], linksOfPhoneOnBot: [] }),
      ).toHaveLength(1);
    }
  });

  it('older than the fact that last changed the link changes nothing (a block republished after a start)', () => {
    const startedAt = new Date('2026-11-24T10:00:05Z');
    const reachable = { ...linked, factAt: startedAt };
    const staleBlock = {
      kind: 'blocked',
      chat: linked.chat,
      reason: 3,
      at: new Date('2026-11-24T10:00:01Z'),
    } as const;
    expect(decideBotUpdate(staleBlock, { linksOfChat: [reachable], linksOfPhoneOnBot: [] })).toEqual([]);
    const laterBlock = { ...staleBlock, at: new Date('2026-11-24T10:00:09Z') };
    expect(decideBotUpdate(laterBlock, { linksOfChat: [reachable], linksOfPhoneOnBot: [] })).toHaveLength(1);
    const blockedLater = { ...linked, reachable: false, factAt: new Date('2026-11-24T10:00:09Z') };
    const staleStart = { kind: 'started', chat: linked.chat, at: startedAt } as const;
    expect(decideBotUpdate(staleStart, { linksOfChat: [blockedLater], linksOfPhoneOnBot: [] })).toEqual([]);
  });

  it('of a chat nobody verified changes nothing', () => {
    expect(
      decideBotUpdate(
        { kind: 'blocked', chat: chat('tg1', '9'), reason: 1 },
        { linksOfChat: [], linksOfPhoneOnBot: [] },
      ),
    ).toEqual([]);
  });
});

describe('change_phone', () => {
  const links = [link('79123456789', chat('tg1', '100')), link('79123456789', chat('mx1', '7'))];
  const command = { oldPhone: '79123456789', newPhone: '79876543210', requestId: 'r1' };

  it('moves every link to the new number', () => {
    expect(decidePhoneChange(command, { linksOfOld: links, linksOfNew: [] })).toEqual({
      links: [{ $case: 'clientPhoneChanged', value: { ...command } }],
      outcome: {
        $case: 'phoneChanged',
        value: { oldPhone: command.oldPhone, newPhone: command.newPhone, linksMoved: 2 },
      },
    });
  });

  it.each([
    ['SAME_PHONE', { ...command, newPhone: command.oldPhone }, links, []],
    ['OLD_PHONE_NOT_FOUND', command, [], []],
    // A request sealed under the key of someone forgotten since opens with both numbers empty.
    ['OLD_PHONE_NOT_FOUND', { ...command, oldPhone: '', newPhone: '' }, [], []],
    ['NEW_PHONE_IN_USE', command, links, [link('79876543210', chat('tg2', '5'))]],
  ] as const)('is refused with %s', (code, cmd, linksOfOld, linksOfNew) => {
    const decision = decidePhoneChange(cmd, { linksOfOld: [...linksOfOld], linksOfNew: [...linksOfNew] });
    expect(decision.links).toEqual([]);
    expect(decision.outcome).toMatchObject({ $case: 'phoneChangeRejected', value: { errorCode: code } });
  });
});

describe('routing', () => {
  const linked = [link('79123456789', chat('tg1', '100')), link('79123456789', chat('mx1', '7'), false)];

  it('goes to the default bot when no name is given, or to the named bot', () => {
    expect(route({ messenger: 'telegram', botName: '' }, account, linked)).toMatchObject({
      routed: true,
      bot: { botId: 'tg1' },
      link: { chat: { chatId: '100' } },
    });
    expect(route({ messenger: 'telegram', botName: 'news' }, account, linked)).toMatchObject({
      routed: false,
      errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
    });
  });

  it.each([
    ['UNKNOWN_BOT', { messenger: 'telegram', botName: 'nope' }, linked],
    ['NO_DEFAULT_BOT', { messenger: 'max', botName: '' }, linked],
    ['CLIENT_NOT_FOUND', { messenger: 'telegram', botName: '' }, []],
    ['BOT_BLOCKED_BY_USER', { messenger: 'max', botName: 'maxshop' }, linked],
    // Past its expiry, even to a person the bot reaches: routed late, it is never sent.
    ['EXPIRED', { messenger: 'telegram', botName: '', expired: true }, linked],
  ] as const)('fails with %s', (code, request, links) => {
    expect(route(request, account, [...links])).toMatchObject({ routed: false, errorCode: code });
  });
});

describe('a fallback channel', () => {
  const max = { messenger: Messenger.MESSENGER_MAX, botName: '' };
  const attempt = {
    messenger: Messenger.MESSENGER_TELEGRAM,
    botName: 'shop',
    botId: 'tg1',
    errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
    errorDescription: 'not linked',
    failedAt: new Date(0),
  };

  it('names the bot it was routed to', () => {
    const route = { channel: 1, current: max, next: [], tried: [attempt] };
    expect(resolved(route, 'maxshop')).toEqual({
      ...route,
      current: { messenger: Messenger.MESSENGER_MAX, botName: 'maxshop' },
    });
  });
});

describe('client/check', () => {
  it('lists the bots a client is linked to and whether each reaches them', () => {
    expect(
      checkClient(
        '79123456789',
        [link('79123456789', chat('tg1', '100')), link('79123456789', chat('mx1', '7'), false)],
        account,
      ),
    ).toEqual({
      $case: 'clientChecked',
      value: {
        phoneNumber: '79123456789',
        exists: true,
        bots: [
          { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop', reachable: true },
          { messenger: Messenger.MESSENGER_MAX, botName: 'maxshop', reachable: false },
        ],
      },
    });
    expect(checkClient('79000000000', [], account)).toMatchObject({ value: { exists: false, bots: [] } });
  });
});
