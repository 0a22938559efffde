import { describe, expect, it } from 'vitest';
import { runSender } from './test-support/stack.js';
import { leaksAndUntakenPaths, runEveryFailurePath } from './test-support/failure-paths.js';

describe('MAX sender: no bot token in any log line', () => {
  it('logs every failure of the MAX API (refused, timeouts, 401/403/429/5xx, setting the webhook, polling, bad answers) without the token', async () => {
    const result = await runEveryFailurePath({
      messenger: 'max',
      start: (env, logger) => runSender('max', env, { logger }),
    });
    expect(leaksAndUntakenPaths(result)).toEqual({ untaken: [], leaks: [] });
  }, 240_000);
});
