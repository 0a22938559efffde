// The simulator's state in one SQLite file, through Node's built-in `node:sqlite`.
//
// Why SQLite, and this one: the store must survive a kill -9 without losing anything the simulator
// answered, be small to change (an update confirmed, a message appended, a fault spent) and need nothing
// downloaded. `node:sqlite` ships with Node 24 (no native npm module, no binary fetched at install; on
// the pinned 24.21 it loads without a flag or an ExperimentalWarning, though Node's docs still call it
// "active development"), and SQLite gives atomic, fsynced transactions (WAL, synchronous=FULL: a commit is
// on disk when it returns), range deletes for trimming queues and transcripts, and recovery of a
// half-written transaction after a crash: what an append-only file would need compaction, torn-write
// checks and replay code of our own for. Exclusive locking keeps a second simulator off the same file.
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { Fault } from '../domain/faults.js';
import type { IdCounters, SavedBot, SavedChat, SavedPerson, SavedUpdate } from '../domain/saved.js';
import type { ChatEntry } from '../domain/types.js';
import type { SavedDelivery, SavedInspector } from '../inspector/inspector.js';
import type { MetaKey, SavedState, SimulatorStore, StoreWrite } from './store.js';

/** Bumped when the tables change; a file of a newer version is refused rather than misread. */
const SCHEMA_VERSION = 1;

// Rows are JSON documents keyed by what they are looked up and trimmed by. Bots and chats keep their
// rowid so they come back in the order they were created (the inbox lists them so).
const SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE bots (id INTEGER NOT NULL UNIQUE, doc TEXT NOT NULL);
CREATE TABLE updates (bot_id INTEGER NOT NULL, id INTEGER NOT NULL, doc TEXT NOT NULL,
  PRIMARY KEY (bot_id, id)) WITHOUT ROWID;
CREATE TABLE people (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE chats (bot_id INTEGER NOT NULL, person_id INTEGER NOT NULL, doc TEXT NOT NULL,
  UNIQUE (bot_id, person_id));
CREATE TABLE chat_entries (seq INTEGER PRIMARY KEY, bot_id INTEGER NOT NULL, person_id INTEGER NOT NULL,
  doc TEXT NOT NULL);
CREATE INDEX chat_entries_by_chat ON chat_entries (bot_id, person_id, seq);
CREATE TABLE faults (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE inspector_names (name TEXT PRIMARY KEY, position INTEGER NOT NULL, secrets TEXT NOT NULL)
  WITHOUT ROWID;
CREATE TABLE inspector_deliveries (name TEXT NOT NULL, seq INTEGER NOT NULL, doc TEXT NOT NULL,
  PRIMARY KEY (name, seq)) WITHOUT ROWID;
PRAGMA user_version = ${SCHEMA_VERSION};
`;

/** The statements of each kind of write, with how a write fills in their parameters. */
const WRITES: {
  [K in StoreWrite['kind']]: {
    sql: string[];
    params: (w: Extract<StoreWrite, { kind: K }>) => SQLInputValue[];
  };
} = {
  meta: {
    sql: [
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ],
    params: (w) => [w.key, JSON.stringify(w.value)],
  },
  putBot: {
    sql: ['INSERT INTO bots (id, doc) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc'],
    params: (w) => [w.bot.id, JSON.stringify(w.bot)],
  },
  deleteBot: {
    sql: ['DELETE FROM bots WHERE id = ?', 'DELETE FROM updates WHERE bot_id = ?'],
    params: (w) => [w.id],
  },
  appendUpdate: {
    sql: ['INSERT OR REPLACE INTO updates (bot_id, id, doc) VALUES (?, ?, ?)'],
    params: (w) => [w.botId, w.update.id, JSON.stringify(w.update)],
  },
  dropUpdatesBefore: {
    sql: ['DELETE FROM updates WHERE bot_id = ? AND id < ?'],
    params: (w) => [w.botId, w.id],
  },
  putPerson: {
    sql: ['INSERT INTO people (id, doc) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc'],
    params: (w) => [w.person.id, JSON.stringify(w.person)],
  },
  deletePerson: { sql: ['DELETE FROM people WHERE id = ?'], params: (w) => [w.id] },
  putChat: {
    sql: [
      'INSERT INTO chats (bot_id, person_id, doc) VALUES (?, ?, ?) ' +
        'ON CONFLICT (bot_id, person_id) DO UPDATE SET doc = excluded.doc',
    ],
    params: (w) => [w.chat.botId, w.chat.personId, JSON.stringify(w.chat)],
  },
  deleteChat: {
    sql: [
      'DELETE FROM chats WHERE bot_id = ? AND person_id = ?',
      'DELETE FROM chat_entries WHERE bot_id = ? AND person_id = ?',
    ],
    params: (w) => [w.botId, w.personId],
  },
  appendEntry: {
    sql: ['INSERT INTO chat_entries (bot_id, person_id, doc) VALUES (?, ?, ?)'],
    params: (w) => [w.botId, w.personId, JSON.stringify(w.entry)],
  },
  keepLastEntries: {
    sql: [
      'DELETE FROM chat_entries WHERE bot_id = ?1 AND person_id = ?2 AND seq NOT IN ' +
        '(SELECT seq FROM chat_entries WHERE bot_id = ?1 AND person_id = ?2 ORDER BY seq DESC LIMIT ?3)',
    ],
    params: (w) => [w.botId, w.personId, w.count],
  },
  putFault: {
    sql: ['INSERT INTO faults (id, doc) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc'],
    params: (w) => [w.fault.id, JSON.stringify(w.fault)],
  },
  deleteFault: { sql: ['DELETE FROM faults WHERE id = ?'], params: (w) => [w.id] },
  putInspectorName: {
    sql: [
      'INSERT INTO inspector_names (name, position, secrets) VALUES (?, ?, ?) ' +
        'ON CONFLICT (name) DO UPDATE SET position = excluded.position, secrets = excluded.secrets',
    ],
    params: (w) => [w.name, w.position, JSON.stringify(w.secrets)],
  },
  deleteInspectorName: {
    sql: ['DELETE FROM inspector_names WHERE name = ?', 'DELETE FROM inspector_deliveries WHERE name = ?'],
    params: (w) => [w.name],
  },
  putDelivery: {
    sql: ['INSERT OR REPLACE INTO inspector_deliveries (name, seq, doc) VALUES (?, ?, ?)'],
    params: (w) => [w.name, w.delivery.seq, JSON.stringify(w.delivery)],
  },
  dropDeliveriesBefore: {
    sql: ['DELETE FROM inspector_deliveries WHERE name = ? AND seq < ?'],
    params: (w) => [w.name, w.seq],
  },
};

/** A state file that cannot be used, with what to do about it. */
export class StateFileError extends Error {}

const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_NOTADB = 26;

function sqliteCode(error: unknown): number | undefined {
  return (error as { errcode?: number }).errcode;
}

export class SqliteStore implements SimulatorStore {
  private readonly statements = new Map<string, StatementSync>();

  private constructor(
    readonly location: string,
    private readonly db: DatabaseSync,
  ) {}

  /** Opens (or creates, readable by its owner only: it holds bot tokens) the state file, and locks it. */
  static open(path: string): SqliteStore {
    const location = resolve(path);
    mkdirSync(dirname(location), { recursive: true });
    if (!existsSync(location)) closeSync(openSync(location, 'a', 0o600));
    let db: DatabaseSync | undefined;
    try {
      db = new DatabaseSync(location, { timeout: 0 });
      db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;');
      // Takes the exclusive lock now, so a second simulator on this file fails at start, not later.
      db.exec('BEGIN IMMEDIATE; COMMIT;');
      const version = Number(db.prepare('PRAGMA user_version').get()?.user_version ?? 0);
      if (version === 0) {
        const tables = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get();
        if (Number(tables?.n) > 0) throw new StateFileError(`${location} holds tables of something else`);
        db.exec(`BEGIN; ${SCHEMA} COMMIT;`);
      } else if (version !== SCHEMA_VERSION) {
        throw new StateFileError(
          `${location} was written by a simulator with state format ${version}; this one reads ${SCHEMA_VERSION}`,
        );
      }
      return new SqliteStore(location, db);
    } catch (error) {
      db?.close();
      throw explained(location, error);
    }
  }

  load(): SavedState {
    const meta = new Map(
      this.rows('SELECT key, value FROM meta').map((r) => [String(r.key), JSON.parse(String(r.value))]),
    );
    const metaValue = <T>(key: MetaKey, fallback: T): T => (meta.get(key) as T | undefined) ?? fallback;
    const updates = grouped(
      this.rows('SELECT bot_id, doc FROM updates ORDER BY bot_id, id'),
      (r) => String(r.bot_id),
      (r) => doc<SavedUpdate>(r),
    );
    const entries = grouped(
      this.rows('SELECT bot_id, person_id, doc FROM chat_entries ORDER BY bot_id, person_id, seq'),
      (r) => `${Number(r.bot_id)}:${Number(r.person_id)}`,
      (r) => doc<ChatEntry>(r),
    );
    const deliveries = grouped(
      this.rows('SELECT name, doc FROM inspector_deliveries ORDER BY name, seq'),
      (r) => String(r.name),
      (r) => doc<SavedDelivery>(r),
    );
    const inspector: SavedInspector = {
      seq: metaValue('inspector.seq', 0),
      names: this.rows('SELECT name, secrets FROM inspector_names ORDER BY position').map((r) => ({
        name: String(r.name),
        secrets: JSON.parse(String(r.secrets)) as string[],
        deliveries: deliveries.get(String(r.name)) ?? [],
      })),
    };
    return {
      world: {
        counters: metaValue<IdCounters>('world.counters', {
          telegramBot: 0,
          maxBot: 0,
          person: 0,
          maxDialog: 0,
        }),
        bots: this.rows('SELECT doc FROM bots ORDER BY rowid').map((r) => {
          const bot = doc<SavedBot>(r);
          return { bot, updates: updates.get(String(bot.id)) ?? [] };
        }),
        people: this.rows('SELECT doc FROM people ORDER BY id').map((r) => doc<SavedPerson>(r)),
        chats: this.rows('SELECT doc FROM chats ORDER BY rowid').map((r) => {
          const chat = doc<SavedChat>(r);
          return { chat, transcript: entries.get(`${chat.botId}:${chat.personId}`) ?? [] };
        }),
      },
      faults: {
        nextId: metaValue('faults.next_id', 1),
        faults: this.rows('SELECT doc FROM faults ORDER BY id').map((r) => doc<Fault>(r)),
      },
      inspector,
    };
  }

  write(writes: readonly StoreWrite[]): void {
    if (writes.length === 0) return;
    this.db.exec('BEGIN');
    try {
      for (const write of writes) {
        const { sql, params } = WRITES[write.kind] as {
          sql: string[];
          params: (w: StoreWrite) => SQLInputValue[];
        };
        const values = params(write);
        for (const text of sql) this.statement(text).run(...values);
      }
      this.db.exec('COMMIT');
    } catch (error) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw error;
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  private statement(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private rows(sql: string) {
    return this.db.prepare(sql).all();
  }
}

function doc<T>(row: Record<string, unknown>): T {
  return JSON.parse(String(row.doc)) as T;
}

function grouped<R, V>(rows: R[], key: (row: R) => string, value: (row: R) => V): Map<string, V[]> {
  const groups = new Map<string, V[]>();
  for (const row of rows) {
    const k = key(row);
    let group = groups.get(k);
    if (!group) groups.set(k, (group = []));
    group.push(value(row));
  }
  return groups;
}

function explained(location: string, error: unknown): StateFileError {
  const message = error instanceof Error ? error.message : String(error);
  const code = sqliteCode(error);
  const reason =
    error instanceof StateFileError
      ? message
      : code === SQLITE_BUSY || code === SQLITE_LOCKED
        ? `${location} is in use by another process (another simulator?): ${message}`
        : code === SQLITE_NOTADB
          ? `${location} is not a simulator state file: ${message}`
          : `${location}: ${message}`;
  return new StateFileError(`STATE_FILE ${reason}. Move the file away, or point STATE_FILE elsewhere.`);
}
