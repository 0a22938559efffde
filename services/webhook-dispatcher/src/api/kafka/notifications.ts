import type { ClientRequestEvent, MessageEvent } from '@mds/contracts';
import type { Knex } from '@mds/db';
import type { ConsumedEvent } from '@mds/kafka';
import { openRecords, rememberSubjects, subjectRowsOf, type PersonKeyPort } from '@mds/personal-data';
import { deliveryOf } from '../../application/notifications.js';
import type { NewDelivery } from '../../application/ports.js';
import { notificationOf } from '../../domain/notifications.js';

/**
 * The consumer's batch handler: the outcome events that call for a notification become deliveries, handed to
 * the dispatcher. Offsets move only once the deliveries are stored: a crash before means the events come
 * again, and the unique source event id drops what was already stored.
 */
export function notificationsHandler(o: {
  db: Knex;
  /** Opens the numbers of client checks for their webhook bodies. */
  personKeys: PersonKeyPort;
  now: () => Date;
  accept: (deliveries: { delivery: NewDelivery; redelivery: boolean }[]) => Promise<void>;
}) {
  return async (events: ConsumedEvent<MessageEvent | ClientRequestEvent>[]): Promise<void> => {
    const at = o.now();
    const records = await openRecords(
      o.personKeys,
      events.map((e) => e.record),
    );
    const deliveries = events.flatMap((e, i): { delivery: NewDelivery; redelivery: boolean }[] => {
      const n = notificationOf(records[i]!);
      if (!n) return [];
      return [{ delivery: deliveryOf(n, at, e.record.metadata), redelivery: e.redelivery }];
    });
    // By the message or request a record belongs to: its deliveries' subject_id (a message.status's too, whose
    // body names no one but whose answer may echo anything).
    await rememberSubjects(
      o.db,
      subjectRowsOf(records, (r) => r.metadata?.streamId),
    );
    if (deliveries.length > 0) await o.accept(deliveries);
  };
}
