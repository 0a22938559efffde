export type { BotFact } from '@mds/messengers';
