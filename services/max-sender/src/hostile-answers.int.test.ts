import { describe, expect, it } from 'vitest';
import { isCleanText } from '@mds/contracts';
import { loadConfig } from '@mds/config';
import { runInProcess } from '@mds/sender-kit/testing';
import { runHostileAnswers } from '@mds/sender-kit/testing/hostile-answers';
import { startMaxSender } from './app.js';
import { configSchema } from './config.js';

describe('MAX sender: what the messenger says is cleaned before it is an event', () => {
  it('turns error answers of NUL and controls, broken UTF-8, a megabyte or no JSON into clean, bounded failures, and goes on', async () => {
    const result = await runHostileAnswers({
      messenger: 'max',
      start: (env, logger) =>
        runInProcess((context) => startMaxSender(loadConfig(configSchema, env), context), { logger }),
    });
    for (const o of result.outcomes) {
      expect(isCleanText(o.description), o.answer).toBe(true);
      expect(o.description.length, o.answer).toBeLessThanOrEqual(2_000);
    }
    const byAnswer = Object.fromEntries(result.outcomes.map((o) => [o.answer, o]));
    // The words the messenger said are kept, what no text may hold replaced by U+FFFD.
    expect(byAnswer.controls).toMatchObject({ outcome: 'messageDeliveryFailed', code: 'INVALID_MESSAGE' });
    expect(byAnswer.controls!.description).toMatch(
      /nul \ufffd bel \ufffd esc \ufffd\[31m del \ufffd nel \ufffd/,
    );
    expect(byAnswer['invalid-utf8']!.description).toMatch(/broken \ufffd+ \ufffd+ bytes/);
    expect(byAnswer.huge).toMatchObject({ outcome: 'messageDeliveryFailed', code: 'INVALID_MESSAGE' });
    // The SDK reads a 502 whose body is no JSON as a MaxError 502: retried like any server error, then sent.
    expect(byAnswer['not-json']).toMatchObject({ outcome: 'messageSent' });
    expect(byAnswer['huge 503']).toMatchObject({ outcome: 'messageSent' });
    expect(result.unclean).toEqual([]);
    // No event needed the codec's last line of defence: the sender cleaned what it was told.
    expect(result.codecCleaned).toEqual([]);
    expect(result.longestLogLine, result.longestLogLineStart).toBeLessThan(20_000);
    expect(result.linked).toBe(true);
    expect(result.lastOutcome).toBe('messageSent');
  }, 240_000);
});
