import type { Logger } from '@mds/logging';
import type { SimulatorStore } from './store.js';
import { ChangeTracker, type TrackedState } from './tracker.js';

/** The simulator's state kept in a store: restored at start, saved as it changes. */
export interface Persistence {
  /** Saves what changed; throws when the store fails (then the change is not saved yet). */
  save(): void;
  /** Saves what changed, logging a failure rather than throwing (for changes no caller waits on). */
  saveOrLog(): void;
  /** Saves what changed and closes the store; later saves do nothing. */
  close(): void;
}

/** Puts back what the store holds into the (empty) state, then keeps the store in step with it. */
export function restoreAndTrack(store: SimulatorStore, state: TrackedState, logger: Logger): Persistence {
  const saved = store.load();
  state.world.restore(saved.world);
  state.faults.restore(saved.faults.faults, saved.faults.nextId);
  state.inspector.restore(saved.inspector);
  const tracker = new ChangeTracker(state, store);
  tracker.prime();
  logger.info(
    {
      stateFile: store.location,
      bots: saved.world.bots.length,
      people: saved.world.people.length,
      chats: saved.world.chats.length,
      faults: saved.faults.faults.length,
      webhooks: saved.inspector.names.reduce((n, slot) => n + slot.deliveries.length, 0),
    },
    'simulated world restored; changes are saved as they happen',
  );
  let closed = false;
  const save = () => {
    if (!closed) tracker.save();
  };
  return {
    save,
    saveOrLog() {
      try {
        save();
      } catch (error) {
        logger.error({ err: error, stateFile: store.location }, 'could not save the simulator state');
      }
    },
    close() {
      if (closed) return;
      try {
        save();
      } finally {
        closed = true;
        store.close();
      }
    },
  };
}
