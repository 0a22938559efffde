import type { Messenger } from '../gen/mds/events/v1/common.js';
import type { MessengerDefinition } from '../messengers.js';

/**
 * A made-up messenger as a plugin would register it (`registerMessenger`), for tests of what the catalogue
 * takes: its sender and delivery topic named after it, a code no built-in one uses.
 */
export function fakeMessenger(
  name: string,
  code: number,
  details: Partial<MessengerDefinition> = {},
): MessengerDefinition {
  return {
    name,
    code: code as Messenger,
    label: name.charAt(0).toUpperCase() + name.slice(1),
    textLimit: 100,
    buttonsPerRow: 2,
    sender: `${name}-sender`,
    deliveryTopic: `mds.delivery.${name}.v1`,
    ...details,
  };
}
