import { describe, expect, it } from 'vitest';
import { loadConfig } from '@mds/config';
import { runInProcess } from '@mds/sender/testing';
import { hostileAnswersProblems, runHostileAnswers } from '@mds/sender/testing/hostile-answers';
import { startMaxSender } from './app.js';
import { configSchema } from './config.js';

describe('MAX sender: what the messenger says is cleaned before it is an event', () => {
  it('turns error answers of NUL and controls, broken UTF-8, a megabyte or no JSON into clean, bounded outcomes, and goes on', async () => {
    const result = await runHostileAnswers({
      messenger: 'max',
      start: (env, logger) =>
        runInProcess((context) => startMaxSender(loadConfig(configSchema, env), context), { logger }),
    });
    expect(hostileAnswersProblems('max', result)).toEqual([]);
  }, 240_000);
});
