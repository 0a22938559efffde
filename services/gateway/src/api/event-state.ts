import { channelsOf } from '@mds/contracts/webhooks';
import { fallbackRouteOf, type EventState } from '@mds/message-state';
import type { z } from 'zod';
import type { eventStateSchema } from './schemas.js';

export type EventStateBody = z.infer<typeof eventStateSchema>;

/** The read API's body of a state: snake_case, only the fields that apply to its kind. */
export function eventStateBody(s: EventState): EventStateBody {
  const body: EventStateBody = {
    event_id: s.eventId,
    kind: s.kind,
    state: s.status,
    accepted_at: s.acceptedAt,
    finished_at: s.finishedAt,
    updated_at: s.updatedAt,
    history: s.history.map((h) => ({ type: h.type, at: h.at, event_id: h.eventId })),
  };
  if (s.errorCode !== null) {
    body.error_code = s.errorCode;
    body.error_description = s.errorDescription ?? '';
  }
  if (s.kind === 'message') {
    body.messenger = s.messenger;
    body.bot_name = s.botName;
    const route = fallbackRouteOf(s);
    if (route) {
      // The channel it is at (or that decided it), and those tried before, as its webhook names them.
      const { service, bot_name, attempts } = channelsOf(route);
      body.messenger = service === 'unknown' ? null : (service ?? null);
      body.bot_name = bot_name ?? null;
      body.service = service;
      body.attempts = attempts;
    }
  } else if (s.result !== null) {
    body.result =
      'oldPhone' in s.result
        ? { old_phone: s.result.oldPhone, new_phone: s.result.newPhone, links_moved: s.result.linksMoved }
        : {
            phone_number: s.result.phoneNumber,
            exists: s.result.exists,
            bots: s.result.bots.map((b) => ({
              messenger: b.messenger,
              bot_name: b.botName,
              reachable: b.reachable,
            })),
          };
  }
  if (s.metadata !== null) body.metadata = s.metadata.values;
  return body;
}
