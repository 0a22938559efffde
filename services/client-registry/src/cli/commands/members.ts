import { Option } from 'commander';
import { type CommandModule, segment } from '../context.js';

export const members: CommandModule = (program, cli) => {
  const group = program
    .command('members')
    .description(
      "a company's dashboard members (the dashboard's operator API: DASHBOARD_URL, DASHBOARD_ADMIN_TOKEN)",
    );
  const path = (company: string, rest = '') => `/companies/${segment(company)}/members${rest}`;
  group
    .command('add')
    .description('add a dashboard member (owner unless told): prints their one-time link')
    .argument('<company>', 'company id')
    .requiredOption('--email <email>', "the member's email address")
    .addOption(
      new Option('--role <role>', 'their role').choices(['owner', 'developer', 'viewer']).default('owner'),
    )
    .option('--name <name>', 'their name')
    .action((company: string, options: { email: string; role: string; name?: string }) =>
      cli.call(
        {
          method: 'POST',
          path: path(company),
          body: { email: options.email, role: options.role, ...(options.name ? { name: options.name } : {}) },
        },
        { target: 'dashboard' },
      ),
    );
  group
    .command('list')
    .description("the company's dashboard members")
    .argument('<company>', 'company id')
    .action((company: string) => cli.call({ method: 'GET', path: path(company) }, { target: 'dashboard' }));
  group
    .command('reset')
    .description('a one-time password reset link for a member')
    .argument('<company>', 'company id')
    .requiredOption('--email <email>', "the member's email address")
    .action((company: string, options: { email: string }) =>
      cli.call(
        { method: 'POST', path: path(company, '/reset'), body: { email: options.email } },
        { target: 'dashboard' },
      ),
    );
};
