import { Messenger } from './gen/mds/events/v1/common.js';

/**
 * The messenger catalogue: everything the platform knows of a messenger that is not its bot API (that is its
 * provider, in @mds/messengers). Every enum, topic, text limit, label and replay column derives from here, so
 * a messenger is added in one place (see docs/adding-a-messenger.md).
 */
export interface MessengerDefinition<Name extends string = string> {
  /** As the public API, the database, the logs and the webhooks name it ("service" in the spec). */
  readonly name: Name;
  /** Its value of enum Messenger in events and gRPC (a registered one may use a number the enum does not name). */
  readonly code: Messenger;
  /** How a person reads it (the dashboard, the docs). */
  readonly label: string;
  /** The most text one message holds, in UTF-16 code units as the messenger counts them. */
  readonly textLimit: number;
  /** How many link buttons one row shows; the sender lays a message's buttons out in rows of this many. */
  readonly buttonsPerRow: number;
  /** Whether it draws a message's link buttons under the message's bubble rather than inside it (the dashboard's preview). */
  readonly buttonsBelowBubble?: boolean;
  /** The sender deployment for it: the events' producer, its consumer group, its schema and Kafka user. */
  readonly sender: string;
  /** The topic client-registry routes its deliveries to and its sender consumes. */
  readonly deliveryTopic: string;
  /**
   * The setting of client-registry naming this messenger's bot API base URL, where it checks tokens; unset:
   * `<NAME>_API_BASE` (apiBaseSetting() says which).
   */
  readonly apiBaseSetting?: string;
}

const BUILT_IN = {
  telegram: {
    name: 'telegram',
    code: Messenger.MESSENGER_TELEGRAM,
    label: 'Telegram',
    textLimit: 4096,
    buttonsPerRow: 1,
    buttonsBelowBubble: true,
    sender: 'telegram-sender',
    deliveryTopic: 'mds.delivery.telegram.v1',
    apiBaseSetting: 'TELEGRAM_API_ROOT',
  },
  max: {
    name: 'max',
    code: Messenger.MESSENGER_MAX,
    label: 'MAX',
    textLimit: 4000,
    buttonsPerRow: 1,
    sender: 'max-sender',
    deliveryTopic: 'mds.delivery.max.v1',
  },
} as const satisfies { [N in string]: MessengerDefinition<N> };

/** A messenger this build ships with; a record keyed by it must name every one (a missing case does not compile). */
export type BuiltInMessengerName = keyof typeof BUILT_IN;

/** The name of a messenger of the catalogue: a built-in one or one registered in this process. */
export type MessengerName = string;

/** The messengers this build ships with, in the order the API documents them. */
export const BUILT_IN_MESSENGERS: readonly MessengerDefinition<BuiltInMessengerName>[] =
  Object.values(BUILT_IN);

const registered = new Map<string, MessengerDefinition>(BUILT_IN_MESSENGERS.map((m) => [m.name, m]));

/**
 * Adds a messenger to the catalogue of this process (a plugin, or a test's fake messenger). Call it before any
 * service starts: schemas and topic lists read the catalogue when they are made.
 */
export function registerMessenger(definition: MessengerDefinition): void {
  const clash = [...registered.values()].find(
    (m) => m.name === definition.name || m.code === definition.code,
  );
  if (clash)
    throw new Error(`messenger ${definition.name} (code ${definition.code}) clashes with ${clash.name}`);
  if (!/^[a-z][a-z0-9_]{0,31}$/.test(definition.name))
    throw new Error(`messenger name ${JSON.stringify(definition.name)}: lower-case letters, digits and _`);
  registered.set(definition.name, definition);
}

/** Every messenger of this process: the built-in ones, then the registered ones. */
export function messengers(): readonly MessengerDefinition[] {
  return [...registered.values()];
}

/** The names of every messenger, as a zod enum wants them (never empty: the built-in ones come first). */
export function messengerNames(): [string, ...string[]] {
  return [...registered.keys()] as [string, ...string[]];
}

export function messengerNamed(name: string): MessengerDefinition | undefined {
  return registered.get(name);
}

export function messengerOfCode(code: number): MessengerDefinition | undefined {
  for (const m of registered.values()) if (m.code === code) return m;
  return undefined;
}

/** The name of a messenger's code; undefined for the unspecified (0) and unknown ones. */
export function messengerNameOf(code: number): string | undefined {
  return messengerOfCode(code)?.name;
}

/** The code of a messenger of the catalogue; an unknown name is a bug (names are checked where they come in). */
export function messengerCode(name: string): Messenger {
  const definition = registered.get(name);
  if (!definition) throw new Error(`no messenger ${JSON.stringify(name)} in the catalogue`);
  return definition.code;
}

/** How a person reads a messenger's name: its label, or the name itself for one this process does not know. */
export function messengerLabel(name: string): string {
  return registered.get(name)?.label ?? name;
}

/** The setting naming a messenger's bot API base URL for client-registry's token checks: `MAX_API_BASE`. */
export function apiBaseSetting(messenger: MessengerDefinition): string {
  return messenger.apiBaseSetting ?? `${messenger.name.toUpperCase()}_API_BASE`;
}
