import { type CommandModule, segment } from '../context.js';

export const companies: CommandModule = (program, cli) => {
  const group = program.command('companies').description('create, list and show companies');
  group
    .command('create')
    .description('create a company')
    .requiredOption('--name <name>', "the company's name")
    .action((options: { name: string }) =>
      cli.call({ method: 'POST', path: '/companies', body: { name: options.name } }),
    );
  group
    .command('list')
    .description('list companies')
    .action(() => cli.call({ method: 'GET', path: '/companies' }));
  group
    .command('show')
    .description('a company: keys (prefixes only), webhook, bots')
    .argument('<company>', 'company id')
    .action((company: string) => cli.call({ method: 'GET', path: `/companies/${segment(company)}` }));
};
