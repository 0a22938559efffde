import { describe, expect, it } from 'vitest';
import { runSender } from './test-support/stack.js';
import { hostileAnswersProblems, runHostileAnswers } from './test-support/hostile-answers.js';

describe('Telegram sender: what the messenger says is cleaned before it is an event', () => {
  it('turns error answers of NUL and controls, broken UTF-8, a megabyte or no JSON into clean, bounded outcomes, and goes on', async () => {
    const result = await runHostileAnswers({
      messenger: 'telegram',
      start: (env, logger) => runSender('telegram', env, { logger }),
    });
    expect(hostileAnswersProblems('telegram', result)).toEqual([]);
  }, 240_000);
});
