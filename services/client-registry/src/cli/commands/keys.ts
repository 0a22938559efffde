import { InvalidArgumentError } from 'commander';
import { type CommandModule, segment } from '../context.js';

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400 };

/** "0", "90s", "30m", "1h", "7d" -> seconds; anything else is refused by name (the registry checks the range). */
export function overlapSeconds(text: string): number {
  const match = /^(\d+)([smhd]?)$/.exec(text.trim());
  if (!match) throw new InvalidArgumentError(`"${text}" is not a duration such as 0, 30m, 1h, 24h or 7d.`);
  return Number(match[1]) * UNIT_SECONDS[match[2] || 's']!;
}

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
    .command('roll')
    .description(
      'roll an API key: a new key (shown once) with its label and scopes; the old one works for --overlap',
    )
    .argument('<company>', 'company id')
    .argument('<key-id>', 'the key id (the part after mds_)')
    .option(
      '--overlap <duration>',
      'how long the old key keeps working: 0 (ends now), or a number with s, m, h or d, up to 7d',
      overlapSeconds,
      0,
    )
    .action((company: string, keyId: string, options: { overlap: number }) =>
      cli.call(
        {
          method: 'POST',
          path: `/companies/${segment(company)}/api-keys/${segment(keyId)}/roll`,
          body: { expires_in_seconds: options.overlap },
        },
        { headline: () => 'The new API key is shown this once: keep it now.' },
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
