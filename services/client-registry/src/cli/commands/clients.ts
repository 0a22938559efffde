import { type CommandModule, segment } from '../context.js';

export const clients: CommandModule = (program, cli) => {
  const group = program
    .command('clients')
    .description("a company's clients (phone numbers linked to bot chats)");
  group
    .command('show')
    .description("a client's links to bots")
    .argument('<company>', 'company id')
    .argument('<phone>', 'phone number, e.g. 79123456789')
    .action((company: string, phone: string) =>
      cli.call({ method: 'GET', path: `/companies/${segment(company)}/clients/${segment(phone)}` }),
    );
  group
    .command('forget')
    .description(
      'erase a person (docs/personal-data.md), with every number change_phone moved them from or to: their keys destroyed, so what Kafka holds of them reads as erased; their links removed; every service told to delete what it keeps of them',
    )
    .argument('<company>', 'company id')
    .argument('<phone>', 'phone number, e.g. 79123456789')
    .action((company: string, phone: string) =>
      cli.call(
        { method: 'POST', path: `/companies/${segment(company)}/clients/${segment(phone)}/forget` },
        {
          headline: (body) => {
            const numbers = (body as { numbers_forgotten?: number }).numbers_forgotten ?? 1;
            const others = numbers > 1 ? ` and ${numbers - 1} other number(s) they moved from or to` : '';
            return `forgot ${phone}${others}: their keys are destroyed and every service deletes what it holds of them`;
          },
        },
      ),
    );
};
