import { describe, expect, it } from 'vitest';
import { loadConfig } from '@mds/config';
import { runInProcess } from '@mds/sender/testing';
import { leaksAndUntakenPaths, runEveryFailurePath } from '@mds/sender/testing/failure-paths';
import { startTelegramSender } from './app.js';
import { configSchema } from './config.js';

describe('Telegram sender: no bot token in any log line', () => {
  it('logs every failure of the Bot API (refused, timeouts, 401/403/429/5xx, setting the webhook, polling, bad answers) without the token', async () => {
    const result = await runEveryFailurePath({
      messenger: 'telegram',
      start: (env, logger) =>
        runInProcess((context) => startTelegramSender(loadConfig(configSchema, env), context), { logger }),
    });
    expect(leaksAndUntakenPaths(result)).toEqual({ untaken: [], leaks: [] });
  }, 240_000);
});
