import type { ClientRequestEvent, MessageEvent } from '@mds/contracts';
import { webhookBodyOf } from '@mds/contracts/webhooks';
import type { Knex } from '@mds/db';
import type { ConsumedEvent } from '@mds/kafka';
import { openRecords, rememberSubjects, subjectRowsOf, type PersonKeyPort } from '@mds/personal-data';
import { fanOut } from '../../application/notifications.js';
import type { EndpointDirectory, NewDelivery } from '../../application/ports.js';
import { isRequestEvent, notificationOf, requestMetadataOf } from '../../domain/notifications.js';
import {
  rememberRequestMetadata,
  requestMetadataById,
  type RequestMetadataRow,
} from '../../adapters/db/request-metadata.js';

/**
 * The ids of requests read here without metadata, until their outcome (the oldest forgotten beyond `limit`, and
 * then looked up). Ids only: metadata is personal data, and what forget erases must not live on in memory.
 */
class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly limit: number) {}
  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > this.limit) this.ids.delete(this.ids.values().next().value!);
  }
  has(id: string): boolean {
    return this.ids.has(id);
  }
  delete(id: string): void {
    this.ids.delete(id);
  }
}
const WITHOUT_METADATA_REMEMBERED = 200_000;

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
  const withoutMetadata = new RecentIds(WITHOUT_METADATA_REMEMBERED);
  return async (events: ConsumedEvent<MessageEvent | ClientRequestEvent>[]): Promise<void> => {
    const at = o.now();
    const records = await openRecords(
      o.personKeys,
      events.map((e) => e.record),
    );
    // A request's event comes before its outcome's (same topic and key): its metadata is stored first.
    const withMetadata: RequestMetadataRow[] = [];
    for (const r of records) {
      if (!isRequestEvent(r)) continue;
      const metadata = requestMetadataOf(r);
      if (metadata)
        withMetadata.push({ request_id: r.metadata.streamId, company_id: r.metadata.companyId, metadata });
      else withoutMetadata.add(r.metadata.streamId);
    }
    await rememberRequestMetadata(o.db, withMetadata);
    // An outcome's metadata is looked up unless this process read its request without any: most requests carry
    // none, and a lookup for every batch of outcomes came to one more query per message at the usual batch sizes.
    const outcomeIds = records.filter((r) => webhookBodyOf(r) !== undefined).map((r) => r.metadata.streamId);
    const requestMetadata = await requestMetadataById(
      o.db,
      outcomeIds.filter((id) => !withoutMetadata.has(id)),
    );
    for (const id of outcomeIds) withoutMetadata.delete(id);
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
