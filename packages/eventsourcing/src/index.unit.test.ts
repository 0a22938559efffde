import { describe, expect, it } from 'vitest';
import { deciderSpec, DomainError, foldByStream, handle, stateOf, type Decider } from './index.js';

// A small decider in the shape of the real ones: a message that is accepted once and then sent or failed.
type Event =
  | { type: 'Accepted'; at: string }
  | { type: 'Sent'; at: string }
  | { type: 'Failed'; at: string; code: string };
type Command = { type: 'Accept'; at: string } | { type: 'RecordOutcome'; at: string; failure?: string };
type State =
  { status: 'none' } | { status: 'new' | 'sent'; since: string } | { status: 'failed'; code: string };

const message: Decider<Command, Event, State> = {
  initialState: () => ({ status: 'none' }),
  decide(command, state) {
    switch (command.type) {
      case 'Accept':
        return state.status === 'none' ? [{ type: 'Accepted', at: command.at }] : [];
      case 'RecordOutcome':
        if (state.status === 'none') throw new DomainError('UNKNOWN_MESSAGE', 'no such message');
        if (state.status !== 'new') return [];
        return command.failure
          ? [{ type: 'Failed', at: command.at, code: command.failure }]
          : [{ type: 'Sent', at: command.at }];
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'Accepted':
        return { status: 'new', since: event.at };
      case 'Sent':
        return { status: 'sent', since: event.at };
      case 'Failed':
        return { status: 'failed', code: event.code };
    }
  },
};

const spec = deciderSpec(message, expect);

describe('deciderSpec', () => {
  it('checks the events a command produces', () => {
    spec
      .given([{ type: 'Accepted', at: 't1' }])
      .when({ type: 'RecordOutcome', at: 't2' })
      .then([{ type: 'Sent', at: 't2' }]);
  });

  it('checks a refusal by its code', () => {
    spec.given([]).when({ type: 'RecordOutcome', at: 't2' }).thenFails('UNKNOWN_MESSAGE');
  });

  it('checks that a repeated command is a no-op', () => {
    spec
      .given([
        { type: 'Accepted', at: 't1' },
        { type: 'Sent', at: 't2' },
      ])
      .when({ type: 'RecordOutcome', at: 't3', failure: 'X' })
      .thenNothingHappened();
  });

  it('checks the state after the new events', () => {
    spec
      .given([{ type: 'Accepted', at: 't1' }])
      .when({ type: 'RecordOutcome', at: 't2', failure: 'BOT_BLOCKED_BY_USER' })
      .thenState((state) => expect(state).toEqual({ status: 'failed', code: 'BOT_BLOCKED_BY_USER' }));
  });

  it('fails when the events differ (the helper can fail)', () => {
    expect(() =>
      spec
        .given([{ type: 'Accepted', at: 't1' }])
        .when({ type: 'RecordOutcome', at: 't2' })
        .then([]),
    ).toThrow();
    expect(() => spec.given([]).when({ type: 'Accept', at: 't1' }).thenFails('ANY')).toThrow();
  });
});

describe('fold', () => {
  it('gives the same state whether events are folded at once or in two steps', () => {
    const events: Event[] = [
      { type: 'Accepted', at: 't1' },
      { type: 'Failed', at: 't2', code: 'C' },
    ];
    const once = stateOf(message, events);
    const stepwise = handle(message, [events[0]!], { type: 'RecordOutcome', at: 't2', failure: 'C' }).state;
    expect(stepwise).toEqual(once);
  });
});

describe('foldByStream', () => {
  it('folds interleaved streams each as stateOf folds it alone, on top of the states given', () => {
    const a: Event[] = [
      { type: 'Accepted', at: 't1' },
      { type: 'Sent', at: 't3' },
    ];
    const b: Event[] = [
      { type: 'Accepted', at: 't2' },
      { type: 'Failed', at: 't4', code: 'C' },
    ];
    const tagged = [a[0]!, b[0]!, a[1]!, b[1]!].map((event) => ({
      stream: a.includes(event) ? 'a' : 'b',
      event,
    }));
    const states = new Map<string, State>([['c', { status: 'sent', since: 't0' }]]);
    const evolve = (state: State, e: { event: Event }) => message.evolve(state, e.event);
    const returned = foldByStream(evolve, message.initialState(), states, tagged, (e) => e.stream);
    expect(returned).toBe(states);
    expect(Object.fromEntries(states)).toEqual({
      a: stateOf(message, a),
      b: stateOf(message, b),
      c: { status: 'sent', since: 't0' },
    });
  });
});
