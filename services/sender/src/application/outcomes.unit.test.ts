import { newEvent, type MessageEvent } from '@mds/contracts';
import { createLogger } from '@mds/logging';
import { describe, expect, it } from 'vitest';
import { createOutcomePublisher } from './outcomes.js';

const outcome = newEvent<MessageEvent>({
  eventId: '00000000-0000-4000-8000-000000000001',
  occurredAt: new Date(0),
  companyId: 'c',
  streamId: '00000000-0000-4000-8000-000000000002',
  correlationId: '00000000-0000-4000-8000-000000000002',
  causationId: '00000000-0000-4000-8000-000000000001',
  producer: 'test',
  event: { $case: 'messageCancelRequested', value: { messenger: 1, apiKeyId: 'k' } },
});

describe('the outcome publisher', () => {
  it('lets go of what holds the same outcome published again while its publication is in flight', async () => {
    let release!: () => void;
    const inKafka = new Promise<void>((resolve) => (release = resolve));
    const works: Promise<void>[] = [];
    const published: unknown[] = [];
    const outcomes = createOutcomePublisher({
      publisher: {
        publish: async (events) => {
          published.push(...events);
          await inKafka;
        },
      },
      journal: { markPublished: () => Promise.resolve() },
      logger: createLogger({ service: 'outcomes-test', level: 'silent' }),
      stopped: new AbortController().signal,
      track: (work) => works.push(work),
    });
    const acked: string[] = [];
    outcomes.publish('key', '', outcome, undefined, { parked: true, acks: [() => acked.push('first')] });
    outcomes.publish('key', '', outcome, undefined, { parked: false, acks: [() => acked.push('again')] });
    expect(published).toHaveLength(1);
    expect(acked).toEqual([]);
    release();
    await Promise.all(works);
    expect(acked).toEqual(['first', 'again']);
  });
});
