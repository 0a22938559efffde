import { readModelsBehind } from '../../adapters/db/read-model-lag.js';
import express, { type Router } from 'express';
import { z } from 'zod';
import { parseOr422, Problem } from '@mds/service-kit';
import { WEBHOOK_ENDPOINT_ID_PATTERN, WEBHOOK_EVENT_TYPES } from '@mds/contracts';
import { listMessages, TEXT_SEARCH_WINDOW } from '../../adapters/db/message-log.js';
import { timelineOf } from '../../adapters/db/queries.js';
import {
  DELIVERY_COUNT_CAP,
  deliveryCounts,
  deliveryOf,
  listDeliveries,
} from '../../adapters/db/delivery-queries.js';
import { withAnswerExcerpts } from './answer-excerpts.js';
import { companyContext } from './company-context.js';
import type { ApiDeps } from './deps.js';
import { messageExportRoute } from './message-export.js';
import { cursor, isoTime, messageFilterOf, messageFilters, queryOf as query, UUID } from './message-query.js';
import { memberWith } from './session.js';

const WEBHOOK_ID = /^msg_[0-9a-f]{32}$/;

const messageQuery = z.strictObject({
  ...messageFilters,
  cursor: cursor.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

const endpointId = z.string().regex(WEBHOOK_ENDPOINT_ID_PATTERN, 'an endpoint id, e.g. ep_default');

const deliveryFilter = {
  endpoint_id: endpointId.optional(),
  kind: z
    .enum(WEBHOOK_EVENT_TYPES, { message: `a notification type: ${WEBHOOK_EVENT_TYPES.join(', ')}` })
    .optional(),
  event_id: z
    .string()
    .regex(UUID, 'the event id of a message or request, e.g. 0b9f6a52-2f7e-4a8e-9a51-1c6f0e3d2b11')
    .optional(),
};

// No status (or "all"): every delivery, whatever its status.
const deliveryQuery = z.strictObject({
  status: z.enum(['all', 'pending', 'failed', 'delivered']).default('all'),
  ...deliveryFilter,
  cursor: cursor.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

const deliveryCountQuery = z.strictObject(deliveryFilter);

const recoverBody = z.strictObject({ since: isoTime, endpoint_id: endpointId.optional() });

/** The message log, timelines and webhook deliveries: the read models, and the dispatcher for resends. */
export function logRouter(d: ApiDeps): Router {
  const router = express.Router();
  const { audit } = companyContext(d);

  // How far behind the pages' data is (every page's banner): the whole consumer group's lag, from the table
  // each replica reports its own partitions to.
  router.get('/freshness', async (_req, res) => {
    memberWith(res, 'read');
    const behind = await readModelsBehind(d.db, d.now());
    res.json({ behind_seconds: behind.seconds, records_behind: behind.records });
  });

  router.get('/messages', async (req, res) => {
    const m = memberWith(res, 'read');
    const q = parseOr422(messageQuery, query(req));
    const page = await listMessages(d.db, m.company_id, {
      ...messageFilterOf(q),
      cursor: q.cursor,
      limit: q.limit,
    });
    res.json({
      messages: page.messages,
      next_cursor: page.nextCursor,
      // A text search looks through a window of messages per page: how many, and how far back this one went.
      ...(q.text
        ? {
            text_search: {
              window: TEXT_SEARCH_WINDOW,
              searched_back_to: page.searchedBackTo?.toISOString() ?? null,
            },
          }
        : {}),
    });
  });

  messageExportRoute(router, d);

  // One answer for an id that does not exist, is malformed or is another company's.
  const notFound = () =>
    new Problem(404, 'not_found', 'Not found', 'No message or request with this id in your company.');

  router.get('/messages/:id', async (req, res) => {
    const m = memberWith(res, 'read');
    const id = String(req.params.id).toLowerCase();
    if (!UUID.test(id)) throw notFound();
    const found = await timelineOf(d.db, m.company_id, id);
    if (!found) throw notFound();
    const timeline = await withAnswerExcerpts(d.dispatcher(m), m.company_id, id, found.timeline);
    res.json({ message: found.message ?? null, timeline });
  });

  router.post('/messages/:id/resend-webhook', async (req, res) => {
    const m = memberWith(res, 'resend-webhooks');
    const id = String(req.params.id).toLowerCase();
    if (!UUID.test(id) || !(await timelineOf(d.db, m.company_id, id))) throw notFound();
    const resent = await d.dispatcher(m).call('POST', `/deliveries/${id}/resend`);
    await audit(m, 'webhook.resent', id);
    res.status(202).json(resent);
  });

  router.get('/deliveries', async (req, res) => {
    const m = memberWith(res, 'read');
    const q = parseOr422(deliveryQuery, query(req));
    const page = await listDeliveries(d.db, m.company_id, {
      status: q.status === 'all' ? undefined : q.status,
      endpointId: q.endpoint_id,
      kind: q.kind,
      subjectId: q.event_id,
      cursor: q.cursor,
      limit: q.limit,
    });
    res.json({ deliveries: page.deliveries, next_cursor: page.nextCursor });
  });

  // How many deliveries each status tab holds under the same filters (each counted up to a cap).
  router.get('/deliveries/counts', async (req, res) => {
    const m = memberWith(res, 'read');
    const q = parseOr422(deliveryCountQuery, query(req));
    const counts = await deliveryCounts(d.db, m.company_id, {
      endpointId: q.endpoint_id,
      kind: q.kind,
      subjectId: q.event_id,
    });
    res.json({ counts, cap: DELIVERY_COUNT_CAP });
  });

  router.post('/deliveries/:webhookId/resend', async (req, res) => {
    const m = memberWith(res, 'resend-webhooks');
    const webhookId = String(req.params.webhookId);
    if (!WEBHOOK_ID.test(webhookId) || !(await deliveryOf(d.db, m.company_id, webhookId)))
      throw new Problem(
        404,
        'delivery_not_found',
        'Delivery not found',
        'No webhook delivery with this id in your company.',
      );
    const resent = await d.dispatcher(m).call('POST', `/deliveries/${webhookId}/resend`);
    await audit(m, 'webhook.delivery_resent', webhookId);
    res.status(202).json(resent);
  });

  router.post('/deliveries/recover', async (req, res) => {
    const m = memberWith(res, 'resend-webhooks');
    const body = parseOr422(recoverBody, req.body);
    const recovered = await d.dispatcher(m).call('POST', `/companies/${m.company_id}/recover`, body);
    await audit(m, 'webhook.recover', '', body);
    res.status(202).json(recovered);
  });

  return router;
}
