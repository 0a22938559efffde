import { type CommandModule, segment } from '../context.js';

export const keys: CommandModule = (program, cli) => {
  const group = program.command('keys').description("a company's API keys");
  group
    .command('issue')
    .description('issue an API key (shown once)')
    .argument('<company>', 'company id')
    .option('--label <text>', 'what the key is for', '')
    .option(
      '--scopes <list>',
      'comma-separated: send, check, change_phone, read (default: all but change_phone)',
      (list: string) => list.split(',').map((scope) => scope.trim()),
    )
    .action((company: string, options: { label: string; scopes?: string[] }) =>
      cli.call(
        {
          method: 'POST',
          path: `/companies/${segment(company)}/api-keys`,
          body: { label: options.label, ...(options.scopes ? { scopes: options.scopes } : {}) },
        },
        { headline: () => 'The API key is shown this once: keep it now.' },
      ),
    );
  group
    .command('revoke')
    .description('revoke an API key')
    .argument('<company>', 'company id')
    .argument('<key-id>', 'the key id (the part after mds_)')
    .action((company: string, keyId: string) =>
      cli.call(
        { method: 'DELETE', path: `/companies/${segment(company)}/api-keys/${segment(keyId)}` },
        { headline: () => `revoked ${keyId}` },
      ),
    );
  group
    .command('reseal')
    .description(
      'seal every stored secret again under the current encryption key (then an old key can be dropped)',
    )
    .action(() =>
      cli.call(
        { method: 'POST', path: '/keys/reseal' },
        { headline: () => 'every stored secret is sealed under the current key' },
      ),
    );
};
