/** What a person did with a bot, read from the messenger's updates, before it becomes an event. */
export type BotFact =
  | { kind: 'started'; chatId: string; userId: string; updateId: string }
  | { kind: 'contact-shared'; chatId: string; userId: string; updateId: string; phone: string }
  | { kind: 'blocked'; chatId: string; userId: string; updateId: string; reason: 'blocked' | 'stopped' }
  | { kind: 'unblocked'; chatId: string; userId: string; updateId: string };
