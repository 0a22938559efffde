/**
 * A decider is the whole behaviour of one aggregate as three pure functions: what state it starts in,
 * which events a command produces in a given state, and how an event changes the state. No I/O, no
 * clock, no random ids: time and ids arrive inside commands and events.
 */
export interface Decider<Command, Event, State> {
  initialState: () => State;
  /** The events the command causes; [] means nothing to do (a resend is a no-op). Throws a DomainError to refuse. */
  decide: (command: Command, state: State) => Event[];
  evolve: (state: State, event: Event) => State;
}

/** A command refused by the domain, with a stable machine code (e.g. OLD_PHONE_NOT_FOUND). */
export class DomainError extends Error {
  override readonly name: string = 'DomainError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The state after the given events: the one fold used by live handlers, projections and replays alike. */
export function fold<Event, State>(
  evolve: (state: State, event: Event) => State,
  initial: State,
  events: Iterable<Event>,
): State {
  let state = initial;
  for (const event of events) state = evolve(state, event);
  return state;
}

/**
 * Folds the events of many streams at once into a map of their states by stream id: how a projection or
 * a replay applies a batch. A stream not yet in `states` starts from `initial`. Mutates and returns `states`.
 */
export function foldByStream<Event, State>(
  evolve: (state: State, event: Event) => State,
  initial: State,
  states: Map<string, State>,
  events: Iterable<Event>,
  streamOf: (event: Event) => string,
): Map<string, State> {
  for (const event of events) {
    const id = streamOf(event);
    const state = states.get(id);
    states.set(id, evolve(state === undefined ? initial : state, event));
  }
  return states;
}

export function stateOf<Command, Event, State>(
  decider: Decider<Command, Event, State>,
  events: Iterable<Event>,
): State {
  return fold(decider.evolve, decider.initialState(), events);
}

/** Decide against the state of the past events; returns the new events and the state after them. */
export function handle<Command, Event, State>(
  decider: Decider<Command, Event, State>,
  past: Iterable<Event>,
  command: Command,
): { events: Event[]; state: State } {
  const before = stateOf(decider, past);
  const events = decider.decide(command, before);
  return { events, state: fold(decider.evolve, before, events) };
}

type Then<Event, State> = {
  /** The command produced exactly these events. */
  then(expected: Event[]): void;
  /** The command was refused with a DomainError of this code. */
  thenFails(code: string): void;
  /** The command produced no event. */
  thenNothingHappened(): void;
  /** Checks the state after the produced events. */
  thenState(check: (state: State) => void): void;
};

/**
 * Given-when-then for deciders: `given([past events]).when(command).then([new events])`. Plain data in,
 * plain data out; assertions use the test runner's `expect` passed in, so the helper runs under any runner.
 */
export function deciderSpec<Command, Event, State>(
  decider: Decider<Command, Event, State>,
  expect: (actual: unknown) => { toEqual(expected: unknown): void },
) {
  return {
    given(past: Event[]) {
      return {
        when(command: Command): Then<Event, State> {
          const run = () => handle(decider, past, command);
          return {
            then(expected) {
              expect(run().events).toEqual(expected);
            },
            thenFails(code) {
              let caught: unknown;
              try {
                run();
              } catch (error) {
                caught = error;
              }
              expect(caught instanceof DomainError ? caught.code : caught).toEqual(code);
            },
            thenNothingHappened() {
              expect(run().events).toEqual([]);
            },
            thenState(check) {
              check(run().state);
            },
          };
        },
      };
    },
  };
}
