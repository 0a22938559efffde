import { newEvent, type AccountEvent, type ClientEvent } from '@mds/contracts';
import { describe, expect, it } from 'vitest';
import type { AccountState } from '../domain/accounts.js';
import type { Link } from '../domain/links.js';
import { createRoutingView, linkKey, type RoutingState } from './routing-view.js';

const account = (companyId: string, name: string): AccountState => ({
  companyId,
  name,
  createdAt: '2026-11-24T00:00:00.000Z',
  apiKeys: {},
  webhookEndpoints: [],
  bots: {},
  defaultBots: {},
});
const link = (phone: string, chatId: string): Link => ({
  phone,
  reachable: true,
  chat: { messenger: 1, botId: 'bot', chatId, userId: chatId },
});

/** The registry's state as a counter of reads and a map the test changes. */
function counted() {
  const reads = { accounts: 0, links: 0 };
  const accounts = new Map<string, AccountState>();
  const links = new Map<string, Link[]>();
  const state: RoutingState = {
    accounts: (ids) => {
      reads.accounts++;
      return Promise.resolve(
        new Map(ids.flatMap((id) => (accounts.has(id) ? [[id, accounts.get(id)!]] : []))),
      );
    },
    linksOfPhones: (pairs) => {
      reads.links++;
      return Promise.resolve(
        new Map(
          pairs.map((p) => [linkKey(p.companyId, p.phone), links.get(linkKey(p.companyId, p.phone)) ?? []]),
        ),
      );
    },
  };
  return { state, reads, accounts, links };
}

const clientEvent = (companyId: string, event: NonNullable<ClientEvent['event']>) =>
  newEvent<ClientEvent>({
    eventId: 'e',
    occurredAt: new Date(),
    companyId,
    streamId: companyId,
    producer: 't',
    event,
  });

describe('the routing view', () => {
  it('reads a company and a number once, then answers from memory', async () => {
    const { state, reads, accounts, links } = counted();
    accounts.set('c', account('c', 'One'));
    links.set(linkKey('c', '79001112233'), [link('79001112233', '1')]);
    const view = createRoutingView({ state });
    for (let i = 0; i < 3; i++) {
      expect((await view.accounts(['c', 'c'])).get('c')?.name).toBe('One');
      expect(
        (await view.linksOfPhones([{ companyId: 'c', phone: '79001112233' }])).get(
          linkKey('c', '79001112233'),
        ),
      ).toHaveLength(1);
    }
    expect(reads).toEqual({ accounts: 1, links: 1 });
  });

  it('reads again what an event of the log changed, and only that', async () => {
    const { state, reads, accounts, links } = counted();
    accounts.set('c', account('c', 'One'));
    const view = createRoutingView({ state });
    const pairs = [
      { companyId: 'c', phone: '79001112233' },
      { companyId: 'c', phone: '79004445566' },
    ];
    await view.accounts(['c']);
    await view.linksOfPhones(pairs);
    links.set(linkKey('c', '79001112233'), [link('79001112233', '7')]);
    view.forget(
      clientEvent('c', {
        $case: 'clientLinked',
        value: { phoneNumber: '79001112233', chat: link('', '7').chat },
      }),
    );
    const after = await view.linksOfPhones(pairs);
    expect(after.get(linkKey('c', '79001112233'))).toHaveLength(1);
    expect(reads.links).toBe(2);

    accounts.set('c', account('c', 'Renamed'));
    view.forget(
      newEvent<AccountEvent>({
        eventId: 'e2',
        occurredAt: new Date(),
        companyId: 'c',
        streamId: 'c',
        producer: 't',
        event: { $case: 'defaultBotChosen', value: { messenger: 1, botId: 'bot' } },
      }),
    );
    expect((await view.accounts(['c'])).get('c')?.name).toBe('Renamed');
    // change_phone moves links between two numbers: both are read again.
    view.forget(
      clientEvent('c', {
        $case: 'clientPhoneChanged',
        value: { oldPhone: '79001112233', newPhone: '79004445566', requestId: 'r' },
      }),
    );
    await view.linksOfPhones(pairs);
    expect(reads.links).toBe(3);
  });

  it('forgets entries older than its time to live and beyond its capacity', async () => {
    const { state, reads } = counted();
    let clock = 0;
    const view = createRoutingView({ state, capacity: 2, ttlMs: 1_000, now: () => clock });
    await view.accounts(['a', 'b']);
    clock = 500;
    await view.accounts(['a', 'b']);
    expect(reads.accounts).toBe(1);
    await view.accounts(['x']);
    expect(view.size().accounts).toBe(2);
    clock = 2_000;
    await view.accounts(['x']);
    expect(reads.accounts).toBe(3);
  });
});
