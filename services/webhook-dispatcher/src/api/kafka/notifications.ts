import type { ClientRequestEvent, MessageEvent } from '@mds/contracts';
import { webhookBodyOf } from '@mds/contracts/webhooks';
import type { Knex } from '@mds/db';
import type { ConsumedEvent } from '@mds/kafka';
import { openRecords, rememberSubjects, subjectRowsOf, type PersonKeyPort } from '@mds/personal-data';
import { fanOut } from '../../application/notifications.js';
import type { EndpointDirectory, NewDelivery } from '../../application/ports.js';
import { notificationOf, requestMetadataOf } from '../../domain/notifications.js';
import { rememberRequestMetadata, requestMetadataById } from '../../adapters/db/request-metadata.js';

/**
 * The consumer's batch handler: the outcome events that call for a notification become deliveries (one per
 * endpoint subscribed to its type, from the endpoint view in memory), handed to the dispatcher. Offsets move only once the deliveries are stored: a crash before means the events come
 * again, and the unique source event id drops what was already stored.
 */
export function notificationsHandler(o: {
  db: Knex;
  /** Opens the numbers of client checks for their webhook bodies. */
  personKeys: PersonKeyPort;
  directory: Pick<EndpointDirectory, 'endpoints'>;
  now: () => Date;
  accept: (deliveries: { delivery: NewDelivery; redelivery: boolean }[]) => Promise<void>;
}) {
  return async (events: ConsumedEvent<MessageEvent | ClientRequestEvent>[]): Promise<void> => {
    const at = o.now();
    const records = await openRecords(
      o.personKeys,
      events.map((e) => e.record),
    );
    // A request's event comes before its outcome's (same topic and key): its metadata is stored first.
    await rememberRequestMetadata(
      o.db,
      records.flatMap((r) => {
        const metadata = requestMetadataOf(r);
        return metadata
          ? [{ request_id: r.metadata.streamId, company_id: r.metadata.companyId, metadata }]
          : [];
      }),
    );
    const outcomes = records.filter((r) => webhookBodyOf(r) !== undefined);
    const requestMetadata = await requestMetadataById(
      o.db,
      outcomes.map((r) => r.metadata.streamId),
    );
    const notifications = events.flatMap((e, i) => {
      const record = records[i]!;
      const notification = notificationOf(record, requestMetadata.get(record.metadata.streamId));
      return notification ? [{ notification, trace: e.record.metadata, redelivery: e.redelivery }] : [];
    });
    const deliveries = (await fanOut(o.directory, notifications, at)).map(({ item, delivery }) => ({
      delivery,
      redelivery: item.redelivery,
    }));
    // By the message or request a record belongs to: its deliveries' subject_id (a message.status's too, whose
    // body names no one but whose answer may echo anything).
    await rememberSubjects(
      o.db,
      subjectRowsOf(records, (r) => r.metadata?.streamId),
    );
    if (deliveries.length > 0) await o.accept(deliveries);
  };
}
