import type { RequestHandler, Response } from 'express';
import type { Logger } from '@mds/logging';

/**
 * Saves what a call changed before its answer leaves, so nothing a client was told happened can be lost
 * to a kill -9 afterwards. Every answer leaves through `res.end` (express's `send` and `json` end there
 * too), so that is where it waits. The answers of one turn of the event loop share one save (a group
 * commit: one fsync for all the calls that came in together, not one each). If the save fails their
 * connections are dropped unanswered: to a client that is a crash, and it retries; the changes
 * themselves are written by the next save that works.
 */
export function saveBeforeAnswer(save: () => void, logger: Logger): RequestHandler {
  let waiting: { res: Response; end: () => void }[] = [];

  const saveThenAnswer = () => {
    const answers = waiting;
    waiting = [];
    try {
      save();
    } catch (error) {
      logger.error(
        { err: error, calls: answers.length },
        'could not save the simulator state; dropping the answers',
      );
      for (const { res } of answers) res.destroy();
      return;
    }
    for (const { end } of answers) end();
  };

  return (_req, res, next) => {
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    res.end = ((...args: unknown[]) => {
      if (waiting.length === 0) setImmediate(saveThenAnswer);
      waiting.push({ res, end: () => end(...args) });
      return res;
    }) as Response['end'];
    next();
  };
}
