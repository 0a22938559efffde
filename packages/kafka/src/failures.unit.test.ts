import kafkajs from 'kafkajs';
import { UndecodableEventError } from '@mds/contracts';
import { describe, expect, it } from 'vitest';
import { failureKind, RefusedRecordError } from './failures.js';

const pg = (code: string) =>
  Object.assign(new Error(`statement - message`), { name: 'error', severity: 'ERROR', code });

describe('failureKind', () => {
  it('says a broker or database that cannot be reached is transient: waiting helps, the records are not at fault', () => {
    for (const error of [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      pg('08006'),
      pg('57P01'),
      pg('53300'),
      pg('40P01'),
      pg('57014'),
      new Error('Connection terminated unexpectedly'),
      new kafkajs.KafkaJSConnectionError('Connection error'),
      Object.assign(new kafkajs.KafkaJSError('leader moved'), { retriable: true }),
      Object.assign(new Error('registry unavailable'), { retriable: true }),
      new Error('batch failed', { cause: pg('08001') }),
    ])
      expect(failureKind(error), String(error)).toBe('transient');
  });

  it('says data exceptions, integrity violations and refusals are the records: no retry can pass', () => {
    for (const error of [
      pg('22P05'),
      pg('22P02'),
      pg('23502'),
      pg('23505'),
      new RefusedRecordError('x'),
      new UndecodableEventError('y'),
    ])
      expect(failureKind(error), String(error)).toBe('record');
  });

  it('knows nothing of the rest (bugs, missing tables)', () => {
    for (const error of [new TypeError('x'), pg('42P01'), pg('XX000'), 'a string', undefined])
      expect(failureKind(error)).toBe('unknown');
  });
});
