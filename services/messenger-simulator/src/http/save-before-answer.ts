import type { RequestHandler, Response } from 'express';
import type { Logger } from '@mds/logging';

/**
 * Saves what a call changed before its answer leaves, so nothing a client was told happened can be lost
 * to a kill -9 afterwards. Every answer leaves through `res.end` (express's `send` and `json` end there
 * too), so that is where the save goes. If the save fails the connection is dropped unanswered: to the
 * client that is a crash, and it retries; the change itself is saved by the next save that works.
 */
export function saveBeforeAnswer(save: () => void, logger: Logger): RequestHandler {
  return (_req, res, next) => {
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    res.end = ((...args: unknown[]) => {
      try {
        save();
      } catch (error) {
        logger.error({ err: error }, 'could not save the simulator state; dropping the answer');
        res.destroy();
        return res;
      }
      return end(...args);
    }) as Response['end'];
    next();
  };
}
