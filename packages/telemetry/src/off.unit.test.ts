import { describe, expect, it } from 'vitest';
import { newEvent, type MessageEvent } from '@mds/contracts';
import { capturedLogger } from '@mds/logging/testing';
import { inHop, isTracing, startHop } from './index.js';

// Tracing off (no OTEL_* variables, so no SDK was started): hops only bind the event's ids to log lines.

const capture = () => capturedLogger('off');

const origin = {
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  eventId: 'e-1',
  correlationId: 'm-1',
};

describe('with tracing off', () => {
  it('binds the event ids to log lines and writes no trace ids; events carry no trace context', async () => {
    expect(isTracing()).toBe(false);
    const { lines, logger } = capture();
    const event = await inHop('a hop', origin, async () => {
      await Promise.resolve();
      logger.info('inside');
      return newEvent<MessageEvent>({
        eventId: 'e-2',
        occurredAt: new Date(),
        companyId: 'c',
        streamId: 'm-1',
        producer: 'test',
        event: { $case: 'messageSent', value: { botId: 'b', providerMessageId: '1', attempts: 1 } },
      });
    });
    expect(lines[0]).toMatchObject({ msg: 'inside', correlationId: 'm-1', eventId: 'e-1' });
    expect(lines[0]).not.toHaveProperty('trace_id');
    expect(event.metadata).toMatchObject({ traceparent: '', tracestate: '' });
  });

  it('passes results and errors through', async () => {
    await expect(inHop('ok', origin, () => Promise.resolve(7))).resolves.toBe(7);
    await expect(inHop('fails', origin, () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    const hop = startHop('sync', undefined);
    expect(hop.run(() => 'value')).toBe('value');
    hop.end();
  });
});
