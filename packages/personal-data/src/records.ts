import type {
  LinkButton,
  PersonalData,
  RequestMetadata,
  SealedPersonalData,
  StreamRecord,
} from '@mds/contracts';
import type { PersonKeyPort } from './keys.js';
import { openPersonalData, sealPersonalData, type PersonKey } from './seal.js';

/** The personal fields an event payload may carry, and its sealed form. */
interface PersonalFields {
  phoneNumber?: string;
  text?: string;
  buttons?: LinkButton[];
  /** change_phone's events: both numbers (the old one is the person's, whose key seals them). */
  oldPhone?: string;
  newPhone?: string;
  /** The request's `metadata` (MessageAccepted and the *Requested events of client requests). */
  requestMetadata?: RequestMetadata | undefined;
  sealed?: SealedPersonalData | undefined;
}

/** The events with personal fields (oneof case names), across every stream. */
export const SEALED_EVENT_CASES: ReadonlySet<string> = new Set([
  'messageAccepted',
  'deliveryRequested',
  // A message with a fallback: passed on sealed to the next channel's routing.
  'deliveryUnroutable',
  'messageAttemptFailed',
  'contactShared',
  'clientLinked',
  'clientUnlinked',
  'clientLinkReachabilityChanged',
  'clientCheckRequested',
  'clientChecked',
  'phoneChangeRequested',
  'phoneChanged',
  'clientPhoneChanged',
]);

const erasedValues = new WeakSet<object>();

/**
 * True when the payload's personal data was sealed under a key that has been destroyed: the person was
 * forgotten. Its personal fields are empty; consumers decide with that (e.g. fail the message as
 * CLIENT_FORGOTTEN) instead of failing the record.
 */
export function isErased(value: unknown): boolean {
  return typeof value === 'object' && value !== null && erasedValues.has(value);
}

function fieldsOf(record: StreamRecord): PersonalFields | undefined {
  const event = record.event;
  if (!event || !SEALED_EVENT_CASES.has(event.$case)) return undefined;
  return event.value as PersonalFields;
}

function withValue<R extends StreamRecord>(record: R, value: PersonalFields): R {
  return { ...record, event: { ...record.event!, value } };
}

/** A payload's personal fields as what is sealed: change_phone's old number goes in `phoneNumber`. */
function personalDataOf(fields: PersonalFields): PersonalData {
  return {
    phoneNumber: ('oldPhone' in fields ? fields.oldPhone : fields.phoneNumber) ?? '',
    text: fields.text ?? '',
    buttons: fields.buttons ?? [],
    newPhoneNumber: fields.newPhone ?? '',
    requestMetadata: fields.requestMetadata,
  };
}

/** The payload with the personal fields it has set from `data` (empty ones blank them). */
function withPersonalData(fields: PersonalFields, data: PersonalData): PersonalFields {
  const value: PersonalFields = { ...fields };
  if ('phoneNumber' in fields) value.phoneNumber = data.phoneNumber;
  if ('text' in fields) value.text = data.text;
  if ('buttons' in fields) value.buttons = data.buttons;
  if ('oldPhone' in fields) value.oldPhone = data.phoneNumber;
  if ('newPhone' in fields) value.newPhone = data.newPhoneNumber;
  if ('requestMetadata' in fields) value.requestMetadata = data.requestMetadata;
  return value;
}

const NO_PERSONAL_DATA: PersonalData = {
  phoneNumber: '',
  text: '',
  buttons: [],
  newPhoneNumber: '',
  requestMetadata: undefined,
};

/** The subject and key a record's personal data is sealed under, when it is. */
export function sealOf(record: StreamRecord): SealedPersonalData | undefined {
  return fieldsOf(record)?.sealed;
}

/**
 * The record with its personal fields moved into `sealed` (and emptied), under the key of the person. Records
 * without personal fields, or already sealed, come back as they are. `key` is the person's key
 * (PersonKeyPort.obtain with the phone, or the key of the event it descends from).
 */
export function sealRecordWith<R extends StreamRecord>(record: R, key: PersonKey): R {
  const fields = fieldsOf(record);
  if (!fields || fields.sealed) return record;
  const sealed = sealPersonalData(key, record.metadata!.companyId, personalDataOf(fields));
  return withValue(record, { ...withPersonalData(fields, NO_PERSONAL_DATA), sealed });
}

/**
 * The phone number a record's personal key is found by (obtain), when it has one in plain text: the
 * person's; for change_phone the old number's (the person whose links are re-pointed).
 */
export function phoneOf(record: StreamRecord): string | undefined {
  const fields = fieldsOf(record);
  if (!fields || fields.sealed) return undefined;
  return ('oldPhone' in fields ? fields.oldPhone : fields.phoneNumber) || undefined;
}

/** Seals records by the phone numbers they carry: one obtain per distinct person (cached by the port). */
export async function sealRecords<R extends StreamRecord>(
  keys: PersonKeyPort,
  records: readonly R[],
): Promise<R[]> {
  return Promise.all(
    records.map(async (record) => {
      const phone = phoneOf(record);
      if (!phone) return record;
      return sealRecordWith(record, await keys.obtain(record.metadata!.companyId, phone));
    }),
  );
}

/**
 * The records with their sealed personal fields opened into the plaintext ones (`sealed` stays as it was,
 * so a record passed on keeps its seal). A record whose key was destroyed comes back with empty personal
 * fields and `isErased(value)` true. Records with nothing sealed come back as they are (events written
 * before sealing existed). A ciphertext that does not open under its own key is tampered with or
 * corrupt: SealedDataError, which consumers treat as any undecodable record.
 */
export async function openRecords<R extends StreamRecord>(
  keys: PersonKeyPort,
  records: readonly R[],
): Promise<R[]> {
  return Promise.all(
    records.map(async (record) => {
      const fields = fieldsOf(record);
      const sealed = fields?.sealed;
      if (!fields || !sealed) return record;
      const companyId = record.metadata!.companyId;
      const key = await keys.get(companyId, sealed.keyId);
      if (key === 'erased') {
        const value = withPersonalData(fields, NO_PERSONAL_DATA);
        erasedValues.add(value);
        return withValue(record, value);
      }
      return withValue(record, withPersonalData(fields, openPersonalData(key, companyId, sealed)));
    }),
  );
}

/** Opens one sealed value (a stored payload, say) to its personal data; undefined when erased. */
export async function openSealed(
  keys: PersonKeyPort,
  companyId: string,
  sealed: SealedPersonalData,
): Promise<PersonalData | undefined> {
  const key = await keys.get(companyId, sealed.keyId);
  return key === 'erased' ? undefined : openPersonalData(key, companyId, sealed);
}
