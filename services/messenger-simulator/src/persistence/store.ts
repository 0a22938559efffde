// The port a store of the simulator's state implements: give back what was saved, apply writes.
import type { Fault } from '../domain/faults.js';
import type { SavedBot, SavedChat, SavedPerson, SavedUpdate, SavedWorld } from '../domain/saved.js';
import type { ChatEntry } from '../domain/types.js';
import type { SavedDelivery, SavedInspector } from '../inspector/inspector.js';

/** Everything a store gives back at start-up. */
export interface SavedState {
  world: SavedWorld;
  faults: { nextId: number; faults: Fault[] };
  inspector: SavedInspector;
}

/** Small values saved whole: the id counters of the world, the faults and the inspector. */
export type MetaKey = 'world.counters' | 'faults.next_id' | 'inspector.seq';

/**
 * One change to what is stored. Deleting a bot deletes its updates, deleting a chat its transcript,
 * deleting an inspector name its deliveries. A chat's entries are kept in the order they were appended;
 * updates and deliveries carry their own ids.
 */
export type StoreWrite =
  | { kind: 'meta'; key: MetaKey; value: unknown }
  | { kind: 'putBot'; bot: SavedBot }
  | { kind: 'deleteBot'; id: number }
  | { kind: 'appendUpdate'; botId: number; update: SavedUpdate }
  | { kind: 'dropUpdatesBefore'; botId: number; id: number }
  | { kind: 'putPerson'; person: SavedPerson }
  | { kind: 'deletePerson'; id: number }
  | { kind: 'putChat'; chat: SavedChat }
  | { kind: 'deleteChat'; botId: number; personId: number }
  | { kind: 'appendEntry'; botId: number; personId: number; entry: ChatEntry }
  | { kind: 'keepLastEntries'; botId: number; personId: number; count: number }
  | { kind: 'putFault'; fault: Fault }
  | { kind: 'deleteFault'; id: number }
  | { kind: 'putInspectorName'; name: string; position: number; secrets: readonly string[] }
  | { kind: 'deleteInspectorName'; name: string }
  | { kind: 'putDelivery'; name: string; delivery: SavedDelivery }
  | { kind: 'dropDeliveriesBefore'; name: string; seq: number };

export interface SimulatorStore {
  /** Where it keeps things, for logs. */
  readonly location: string;
  /** What was saved (nothing, for a new store). */
  load(): SavedState;
  /** Applies every write, in order, atomically and durably (on disk when it returns), or throws having applied none. */
  write(writes: readonly StoreWrite[]): void;
  close(): void;
}
