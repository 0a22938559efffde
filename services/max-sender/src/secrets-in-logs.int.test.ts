import { describe, expect, it } from 'vitest';
import { loadConfig } from '@mds/config';
import { runInProcess } from '@mds/sender/testing';
import { leaksAndUntakenPaths, runEveryFailurePath } from '@mds/sender/testing/failure-paths';
import { startMaxSender } from './app.js';
import { configSchema } from './config.js';

describe('MAX sender: no bot token in any log line', () => {
  it('logs every failure of the MAX API (refused, timeouts, 401/403/429/5xx, setting the webhook, polling, bad answers) without the token', async () => {
    const result = await runEveryFailurePath({
      messenger: 'max',
      start: (env, logger) =>
        runInProcess((context) => startMaxSender(loadConfig(configSchema, env), context), { logger }),
    });
    expect(leaksAndUntakenPaths(result)).toEqual({ untaken: [], leaks: [] });
  }, 240_000);
});
