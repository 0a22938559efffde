/**
 * What a person did with a bot, read from the messenger's updates, before it becomes an event. Its ids are what
 * the messenger said (`string`) or, once the shared mechanism has cleaned them (outside-text.ts), `CleanText`:
 * only that form becomes an event.
 */
export type BotFact<Text extends string = string> =
  | { kind: 'started'; chatId: Text; userId: Text; updateId: Text }
  | { kind: 'contact-shared'; chatId: Text; userId: Text; updateId: Text; phone: Text }
  | { kind: 'blocked'; chatId: Text; userId: Text; updateId: Text; reason: 'blocked' | 'stopped' }
  | { kind: 'unblocked'; chatId: Text; userId: Text; updateId: Text };
