import { Messenger } from './gen/mds/events/v1/common.js';

/** A messenger as the public API, the database and the logs name it. */
export type MessengerName = 'telegram' | 'max';

/** Every messenger by name, with its code in events and gRPC (enum Messenger). */
export const MESSENGER_CODE = {
  telegram: Messenger.MESSENGER_TELEGRAM,
  max: Messenger.MESSENGER_MAX,
} as const satisfies Record<MessengerName, Messenger>;

/** The name of a messenger's code; undefined for the unspecified (0) and unknown ones. */
export function messengerNameOf(code: number): MessengerName | undefined {
  if (code === MESSENGER_CODE.telegram) return 'telegram';
  if (code === MESSENGER_CODE.max) return 'max';
  return undefined;
}
