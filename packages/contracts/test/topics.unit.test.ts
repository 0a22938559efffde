import { describe, expect, it } from 'vitest';
import { deliveryTopic, topics } from '../src/index.js';
import { streams } from './fixtures.js';

const pascal = (eventCase: string) => eventCase[0]!.toUpperCase() + eventCase.slice(1);

describe('the topics', () => {
  // The owners are what docs/architecture.md and operators read for "who writes this": an event added to a
  // stream without its writer would be published by nobody on paper.
  it.each([...Object.values(topics), deliveryTopic('telegram')].map((t) => [t.name, t] as const))(
    '%s names the writer of every event of its stream',
    (_name, topic) => {
      const stream = streams.find((s) => s.codec.messageType === topic.codec.messageType);
      expect(stream).toBeDefined();
      // '*': one writer of them all.
      if (Object.keys(topic.owners).join() === '*') return;
      expect(Object.keys(topic.owners).sort()).toEqual(Object.keys(stream!.samples).map(pascal).sort());
    },
  );
});
