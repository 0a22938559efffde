// Finds what changed in the simulator's state since it was last saved, and saves just that.
//
// Rather than every piece of domain code reporting its changes (one forgotten report and a change is
// lost), each save compares the state with marks kept from the previous one. It relies on how the domain
// changes things: the parts of a bot, person or chat that change after creation are numbers, strings or
// objects that are replaced whole (a webhook, a subscription list, a reply keyboard), so comparing them
// by identity is enough; transcripts, update queues and inspector deliveries only grow at the end and
// shrink at the front. A save costs one pass over bots, people, chats, faults and inspector names, with
// no serialising of what did not change, and writes nothing at all when nothing changed.
import type { Faults } from '../domain/faults.js';
import { savedBot, savedChat, savedPerson } from '../domain/saved.js';
import type { Bot, Chat, ChatEntry, Person } from '../domain/types.js';
import type { World } from '../domain/world.js';
import type { WebhookInspector } from '../inspector/inspector.js';
import type { MetaKey, SimulatorStore, StoreWrite } from './store.js';

/** What is saved: the world, the scripted faults and the webhook inspector. */
export interface TrackedState {
  world: World;
  faults: Faults;
  inspector: WebhookInspector;
}

type Parts = readonly unknown[];

const sameParts = (a: Parts, b: Parts) => a.length === b.length && a.every((value, i) => value === b[i]);

/** The parts of a bot that change after it is created (where its queue starts is compared apart). */
function botParts(bot: Bot): Parts {
  return bot.messenger === 'telegram'
    ? [bot.webhook, bot.allowedUpdates, bot.lastWebhookError, bot.updates.nextId]
    : [bot.subscriptions, bot.unreadFrom, bot.updates.nextId];
}

interface BotMark {
  bot: Bot;
  parts: Parts;
  /** The first update id the store holds, and the id after the last. */
  updatesFrom: number;
  updatesNext: number;
}

interface ChatMark {
  status: Chat['status'];
  nextMessageNumber: number;
  replyKeyboard: Chat['replyKeyboard'];
  /** The newest entry the store holds, and how many it holds. */
  lastEntry: ChatEntry | undefined;
  length: number;
}

interface NameMark {
  secrets: readonly string[];
  position: number;
  /** The first and last delivery seq the store holds. */
  firstSeq: number;
  lastSeq: number;
}

/** What a save writes, deletions first, and how the marks move once the store has it. */
class Changes {
  readonly deletes: StoreWrite[] = [];
  readonly puts: StoreWrite[] = [];
  readonly marks: (() => void)[] = [];

  get writes(): StoreWrite[] {
    return [...this.deletes, ...this.puts];
  }

  /** Deletes what has a mark but is gone from the state, and its mark once that is written. */
  deleteGone<K, M>(
    marks: Map<K, M>,
    stillThere: (key: K, mark: M) => boolean,
    write: (key: K) => StoreWrite,
  ) {
    for (const [key, mark] of marks) {
      if (stillThere(key, mark)) continue;
      this.deletes.push(write(key));
      this.marks.push(() => marks.delete(key));
    }
  }
}

export class ChangeTracker {
  private readonly bots = new Map<number, BotMark>();
  private readonly people = new Map<number, { person: Person; deactivated: boolean }>();
  /** By chat object: a chat made again for the same bot and person (the bot was re-created) is another. */
  private readonly chats = new Map<Chat, ChatMark>();
  /** Remaining count of each fault. */
  private readonly faults = new Map<number, number>();
  private readonly names = new Map<string, NameMark>();
  /** What was written of each meta key, as JSON. */
  private readonly meta = new Map<MetaKey, string>();

  constructor(
    private readonly state: TrackedState,
    private readonly store: SimulatorStore,
  ) {}

  /**
   * Writes what changed since the last save in one transaction (nothing when nothing changed) and
   * answers how many writes that was. When the store fails nothing counts as saved: the next save
   * writes it all again.
   */
  save(): number {
    const changes = this.changes();
    const writes = changes.writes;
    if (writes.length > 0) this.store.write(writes);
    for (const mark of changes.marks) mark();
    return writes.length;
  }

  /** Takes the state as it is now as saved (it was just restored from the store). */
  prime(): void {
    for (const mark of this.changes().marks) mark();
  }

  private changes(): Changes {
    const changes = new Changes();
    this.metaChange(changes, 'world.counters', this.state.world.idCounters);
    this.botChanges(changes);
    this.personChanges(changes);
    this.chatChanges(changes);
    this.faultChanges(changes);
    this.inspectorChanges(changes);
    return changes;
  }

  private metaChange(changes: Changes, key: MetaKey, value: unknown): void {
    const text = JSON.stringify(value);
    if (this.meta.get(key) === text) return;
    changes.puts.push({ kind: 'meta', key, value });
    changes.marks.push(() => this.meta.set(key, text));
  }

  private botChanges(changes: Changes): void {
    const { bots } = this.state.world;
    changes.deleteGone(
      this.bots,
      (id, mark) => bots.get(id) === mark.bot,
      (id) => ({ kind: 'deleteBot', id }),
    );
    for (const bot of bots.values()) {
      const mark = this.bots.get(bot.id);
      const known = mark?.bot === bot ? mark : undefined;
      const parts = botParts(bot);
      const updatesFrom = bot.updates.head()?.id ?? bot.updates.nextId;
      const updatesNext = bot.updates.nextId;
      const changed = !known || !sameParts(known.parts, parts);
      if (!changed && known.updatesFrom === updatesFrom) continue;
      if (changed) changes.puts.push({ kind: 'putBot', bot: savedBot(bot) });
      for (const update of bot.updates.read(known?.updatesNext ?? 0, Infinity)) {
        changes.puts.push({ kind: 'appendUpdate', botId: bot.id, update });
      }
      if (known && updatesFrom > known.updatesFrom) {
        changes.puts.push({ kind: 'dropUpdatesBefore', botId: bot.id, id: updatesFrom });
      }
      changes.marks.push(() => this.bots.set(bot.id, { bot, parts, updatesFrom, updatesNext }));
    }
  }

  private personChanges(changes: Changes): void {
    const { people } = this.state.world;
    changes.deleteGone(
      this.people,
      (id, mark) => people.get(id) === mark.person,
      (id) => ({ kind: 'deletePerson', id }),
    );
    for (const person of people.values()) {
      const mark = this.people.get(person.id);
      const { deactivated } = person;
      if (mark?.person === person && mark.deactivated === deactivated) continue;
      changes.puts.push({ kind: 'putPerson', person: savedPerson(person) });
      changes.marks.push(() => this.people.set(person.id, { person, deactivated }));
    }
  }

  private chatChanges(changes: Changes): void {
    const { world } = this.state;
    const live = (chat: Chat) =>
      world.people.get(chat.person.id) === chat.person &&
      world.bots.get(chat.bot.id) === chat.bot &&
      chat.person.chats.get(chat.bot.id) === chat;
    changes.deleteGone(this.chats, live, (chat) => ({
      kind: 'deleteChat',
      botId: chat.bot.id,
      personId: chat.person.id,
    }));
    for (const person of world.people.values()) {
      for (const chat of person.chats.values()) this.chatChange(changes, chat);
    }
  }

  /** Called for every chat on every save: kept to comparisons, no allocation when nothing changed. */
  private chatChange(changes: Changes, chat: Chat): void {
    const known = this.chats.get(chat);
    const { status, nextMessageNumber, replyKeyboard, transcript } = chat;
    const lastEntry = transcript[transcript.length - 1];
    const changed =
      known?.status !== status ||
      known.nextMessageNumber !== nextMessageNumber ||
      known.replyKeyboard !== replyKeyboard;
    if (!changed && known.lastEntry === lastEntry) return;
    const ids = { botId: chat.bot.id, personId: chat.person.id };
    if (changed) changes.puts.push({ kind: 'putChat', chat: savedChat(chat) });
    // Entries after the newest one saved are new; if it was trimmed away meanwhile, all of them are.
    const firstNew = known?.lastEntry ? transcript.lastIndexOf(known.lastEntry) + 1 : 0;
    for (const entry of transcript.slice(firstNew)) changes.puts.push({ kind: 'appendEntry', ...ids, entry });
    const stored = (known?.length ?? 0) + transcript.length - firstNew;
    if (stored > transcript.length) {
      changes.puts.push({ kind: 'keepLastEntries', ...ids, count: transcript.length });
    }
    const mark: ChatMark = { status, nextMessageNumber, replyKeyboard, lastEntry, length: transcript.length };
    changes.marks.push(() => this.chats.set(chat, mark));
  }

  private faultChanges(changes: Changes): void {
    const { faults } = this.state;
    this.metaChange(changes, 'faults.next_id', faults.nextFaultId);
    const live = new Set(faults.list().map((f) => f.id));
    changes.deleteGone(
      this.faults,
      (id) => live.has(id),
      (id) => ({ kind: 'deleteFault', id }),
    );
    for (const fault of faults.list()) {
      const { id, remaining } = fault;
      if (this.faults.get(id) === remaining) continue;
      changes.puts.push({ kind: 'putFault', fault: { ...fault } });
      changes.marks.push(() => this.faults.set(id, remaining));
    }
  }

  private inspectorChanges(changes: Changes): void {
    const { inspector } = this.state;
    this.metaChange(changes, 'inspector.seq', inspector.lastSeq);
    const slots = inspector.slotsInUseOrder();
    const live = new Set(slots.map((s) => s.name));
    changes.deleteGone(
      this.names,
      (name) => live.has(name),
      (name) => ({ kind: 'deleteInspectorName', name }),
    );
    slots.forEach(({ name, secrets, deliveries }, position) => {
      const mark = this.names.get(name);
      const lastSeq = deliveries.at(-1)?.seq ?? mark?.lastSeq ?? 0;
      const firstSeq = deliveries[0]?.seq ?? lastSeq + 1;
      const next: NameMark = { secrets, position, firstSeq, lastSeq };
      const unchanged =
        mark?.secrets === secrets &&
        mark.position === position &&
        mark.firstSeq === firstSeq &&
        mark.lastSeq === lastSeq;
      if (unchanged) return;
      if (mark?.secrets !== secrets || mark.position !== position) {
        changes.puts.push({ kind: 'putInspectorName', name, position, secrets });
      }
      // New secrets verify earlier deliveries again (in place): then every delivery is written again.
      const writtenUpTo = mark?.secrets === secrets ? mark.lastSeq : 0;
      for (const { json: _json, ...delivery } of deliveries) {
        if (delivery.seq > writtenUpTo) changes.puts.push({ kind: 'putDelivery', name, delivery });
      }
      if (mark && firstSeq > mark.firstSeq) {
        changes.puts.push({ kind: 'dropDeliveriesBefore', name, seq: firstSeq });
      }
      changes.marks.push(() => this.names.set(name, next));
    });
  }
}
