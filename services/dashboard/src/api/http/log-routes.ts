import { readModelsBehind } from '../../adapters/db/read-model-lag.js';
import express, { type Router } from 'express';
import { z } from 'zod';
import { parseOr422, Problem } from '@mds/service-kit';
import { WEBHOOK_ENDPOINT_ID_PATTERN } from '@mds/contracts';
import { listMessages, TEXT_SEARCH_WINDOW } from '../../adapters/db/message-log.js';
import { deliveryOf, listDeliveries, timelineOf } from '../../adapters/db/queries.js';
import { withAnswerExcerpts } from './answer-excerpts.js';
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

const deliveryQuery = z.strictObject({
  status: z.enum(['pending', 'failed', 'delivered']).default('failed'),
  endpoint_id: endpointId.optional(),
  cursor: cursor.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

const recoverBody = z.strictObject({ since: isoTime, endpoint_id: endpointId.optional() });

/** The message log, timelines and webhook deliveries: the read models, and the dispatcher for resends. */
export function logRouter(d: ApiDeps): Router {
  const router = express.Router();

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
    res.status(202).json(await d.dispatcher(m).call('POST', `/deliveries/${id}/resend`));
  });

  router.get('/deliveries', async (req, res) => {
    const m = memberWith(res, 'read');
    const q = parseOr422(deliveryQuery, query(req));
    const page = await listDeliveries(d.db, m.company_id, {
      status: q.status,
      endpointId: q.endpoint_id,
      cursor: q.cursor,
      limit: q.limit,
    });
    res.json({ deliveries: page.deliveries, next_cursor: page.nextCursor });
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
    res.status(202).json(await d.dispatcher(m).call('POST', `/deliveries/${webhookId}/resend`));
  });

  router.post('/deliveries/recover', async (req, res) => {
    const m = memberWith(res, 'resend-webhooks');
    const body = parseOr422(recoverBody, req.body);
    const recovered = await d.dispatcher(m).call('POST', `/companies/${m.company_id}/recover`, body);
    await d.access.audit({
      companyId: m.company_id,
      memberId: m.member_id,
      action: 'webhook.recover',
      detail: body,
    });
    res.status(202).json(recovered);
  });

  return router;
}
