import { type CommandModule } from '../context.js';
import { bots } from './bots.js';
import { clients } from './clients.js';
import { companies } from './companies.js';
import { keys } from './keys.js';
import { members } from './members.js';
import { webhook } from './webhook.js';

/** mds-admin's command groups, in the order its help lists them. */
export const commands: CommandModule[] = [companies, keys, webhook, bots, clients, members];
