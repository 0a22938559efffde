import { type CommandModule, segment } from '../context.js';
import { webhookEndpointCommands } from './webhook-endpoints.js';

export const webhook: CommandModule = (program, cli) => {
  const group = program
    .command('webhook')
    .description(
      "a company's webhook endpoints (`endpoints ...`); set, secrets, rotate, enable and disable act on ep_default, the single URL of old",
    );
  const path = (company: string, rest = '') => `/companies/${segment(company)}/webhook${rest}`;
  group
    .command('set')
    .description('set the webhook URL (a signing secret is made the first time)')
    .argument('<company>', 'company id')
    .argument('<url>', 'https URL the notifications are posted to')
    .action((company: string, url: string) =>
      cli.call({ method: 'PUT', path: path(company), body: { url } }),
    );
  group
    .command('secrets')
    .description('show the signing secrets valid now')
    .argument('<company>', 'company id')
    .action((company: string) => cli.call({ method: 'GET', path: path(company, '/secrets') }));
  group
    .command('rotate')
    .description('make a new signing secret; the old one signs too for a while')
    .argument('<company>', 'company id')
    .action((company: string) => cli.call({ method: 'POST', path: path(company, '/rotate-secret') }));
  for (const action of ['enable', 'disable'] as const) {
    group
      .command(action)
      .description(`turn delivery to the endpoint ${action === 'enable' ? 'on' : 'off'}`)
      .argument('<company>', 'company id')
      .action((company: string) => cli.call({ method: 'POST', path: path(company, `/${action}`) }));
  }
  webhookEndpointCommands(group, cli);
};
