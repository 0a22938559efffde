import { describe, expect, it } from 'vitest';
import { loadConfig } from '@mds/config';
import { runInProcess } from '@mds/sender/testing';
import { hostileAnswersProblems, runHostileAnswers } from '@mds/sender/testing/hostile-answers';
import { startTelegramSender } from './app.js';
import { configSchema } from './config.js';

describe('Telegram sender: what the messenger says is cleaned before it is an event', () => {
  it('turns error answers of NUL and controls, broken UTF-8, a megabyte or no JSON into clean, bounded outcomes, and goes on', async () => {
    const result = await runHostileAnswers({
      messenger: 'telegram',
      start: (env, logger) =>
        runInProcess((context) => startTelegramSender(loadConfig(configSchema, env), context), { logger }),
    });
    expect(hostileAnswersProblems('telegram', result)).toEqual([]);
  }, 240_000);
});
