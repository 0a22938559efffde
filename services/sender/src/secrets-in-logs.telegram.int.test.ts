import { describe, expect, it } from 'vitest';
import { runSender } from './test-support/stack.js';
import { leaksAndUntakenPaths, runEveryFailurePath } from './test-support/failure-paths.js';

describe('Telegram sender: no bot token in any log line', () => {
  it('logs every failure of the Bot API (refused, timeouts, 401/403/429/5xx, setting the webhook, polling, bad answers) without the token', async () => {
    const result = await runEveryFailurePath({
      messenger: 'telegram',
      start: (env, logger) => runSender('telegram', env, { logger }),
    });
    expect(leaksAndUntakenPaths(result)).toEqual({ untaken: [], leaks: [] });
  }, 240_000);
});
