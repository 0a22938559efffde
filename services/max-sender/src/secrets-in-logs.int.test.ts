import { describe, expect, it } from 'vitest';
import { loadConfig } from '@mds/config';
import { runInProcess } from '@mds/sender-kit/testing';
import { runEveryFailurePath } from '@mds/sender-kit/testing/failure-paths';
import { startMaxSender } from './app.js';
import { configSchema } from './config.js';

describe('MAX sender: no bot token in any log line', () => {
  it('logs every failure of the MAX API (refused, timeouts, 401/403/429/5xx, setWebhook, getUpdates, bad answers) without the token', async () => {
    const result = await runEveryFailurePath({
      messenger: 'max',
      start: (env, logger) =>
        runInProcess((context) => startMaxSender(loadConfig(configSchema, env), context), {
          logger,
        }),
    });
    // The paths were taken: failures were logged and every message came to an outcome.
    expect(result.lines.some((l) => l.includes('could not set the updates webhook'))).toBe(true);
    expect(result.lines.some((l) => l.includes('reading updates failed'))).toBe(true);
    expect(result.outcomeCodes).toEqual(
      expect.arrayContaining(['messageSent', 'BOT_BLOCKED_BY_USER', 'BOT_MISCONFIGURED']),
    );
    for (const secret of result.secrets) {
      expect(result.lines.filter((l) => l.includes(secret))).toEqual([]);
      expect(result.outcomes.filter((e) => e.includes(secret))).toEqual([]);
    }
  }, 240_000);
});
