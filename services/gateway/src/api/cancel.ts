import type { Request, Response } from 'express';
import { z } from 'zod';
import { fallbackRouteOf } from '@mds/message-state';
import { Problem, validationProblem } from '@mds/service-kit';
import { messageCancelRequested } from '../application/events.js';
import type { ApiDeps } from './routes.js';
import { callerOf } from './middleware.js';

export const cancelRequestSchema = z
  .strictObject({
    event_id: z.string({ error: 'Expected a string' }).meta({
      description: 'The `event_id` of the message, from the 202 of its `POST /api/v1/send`.',
      examples: ['0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10'],
    }),
  })
  .meta({ id: 'CancelRequest' });

export const cancelAcceptedSchema = z
  .object({ status: z.literal('cancel_requested'), event_id: z.uuid() })
  .meta({
    id: 'CancelAccepted',
    description:
      'The cancel is in the log. The message ends `failed` with `CANCELED` if no attempt to send it was started yet; otherwise it ends as it would have. A message with a `fallback` is canceled on the channel it is at: if that channel had already passed it on to the next, the message goes on there. Its one `message.status` webhook says which.',
  });

export const NOT_CANCELABLE = 'message_not_cancelable';

/**
 * POST /api/v1/cancel: asks that a message not yet ended be canceled. 202 only says the cancel is in the log:
 * the message ends failed CANCELED if no call to the messenger was started for it yet (its sender's journal
 * decides), and its one webhook says which it came to. A message with a fallback is canceled on the channel the
 * read model has it at; one that channel passed on meanwhile goes on. The read model answers what it can see:
 * 404 for an id the company has no message of, 409 once the message ended.
 */
export function cancelHandler(
  deps: Pick<ApiDeps, 'states' | 'publisher' | 'publishTimeoutMs' | 'now' | 'newId'>,
) {
  return async (req: Request, res: Response) => {
    const parsed = cancelRequestSchema.safeParse(req.body);
    if (!parsed.success) throw validationProblem(parsed.error, 'The request body is not valid; see errors.');
    const caller = callerOf(res);
    const state = await deps.states.read(parsed.data.event_id, caller.companyId);
    if (!state || state.kind !== 'message' || state.messenger === null)
      throw new Problem(
        404,
        'not_found',
        'Not found',
        'No message of your company has this event_id (an id is readable a moment after its 202).',
      );
    if (state.status !== 'new')
      throw new Problem(
        409,
        NOT_CANCELABLE,
        'Message not cancelable',
        `The message ended already (${state.status}${state.errorCode ? ` ${state.errorCode}` : ''}); nothing was canceled.`,
      );
    const event = messageCancelRequested(
      {
        // The id as the message's events spell it (the read accepts any case): its stream and key.
        requestId: state.eventId,
        companyId: caller.companyId,
        apiKeyId: caller.keyId,
        at: deps.now(),
        eventId: deps.newId(),
      },
      state.messenger,
      fallbackRouteOf(state),
    );
    try {
      await deps.publisher.publish([event], { timeoutMs: deps.publishTimeoutMs });
    } catch {
      throw new Problem(
        503,
        'broker_unavailable',
        'Service unavailable',
        'The cancel may or may not have been recorded: the event log is unavailable. Retry shortly (a cancel may be repeated).',
        undefined,
        { 'Retry-After': '5' },
      );
    }
    res.status(202).json({ status: 'cancel_requested', event_id: state.eventId });
  };
}
