import { describe, expect, it } from 'vitest';
import { Messenger, routeAfter } from '../src/index.js';

describe('a fallback route after a channel could not reach the person', () => {
  const telegram = { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop' };
  const max = { messenger: Messenger.MESSENGER_MAX, botName: '' };
  const attempt = {
    messenger: Messenger.MESSENGER_TELEGRAM,
    botName: 'shop',
    botId: 'tg1',
    errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
    errorDescription: 'not linked',
    failedAt: new Date(0),
  };

  it('is the next one left, with the failed one among those tried', () => {
    const failed = { channel: 0, current: telegram, next: [max, telegram], tried: [] };
    expect(routeAfter(failed, attempt)).toEqual({
      channel: 1,
      current: max,
      next: [telegram],
      tried: [attempt],
    });
    expect(routeAfter({ channel: 2, current: max, next: [], tried: [attempt, attempt] }, attempt)).toBe(
      undefined,
    );
  });
});
