import { BUILT_IN_MESSENGERS, messengerNames, messengers } from '@mds/contracts';
import { type Command, Option } from 'commander';
import { type CommandModule, segment } from '../context.js';
import { readSecret, SecretInputError } from '../secret-input.js';

type AddOptions = { messenger: string; name: string; tokenFile?: string; token?: string; default: boolean };

export const bots: CommandModule = (program, cli) => {
  const labels = messengers().map((m) => m.label);
  const group = program.command('bots').description(`a company's ${labels.join(' and ')} bots`);
  const example = BUILT_IN_MESSENGERS[0]!.name;
  const path = (company: string, rest = '') => `/companies/${segment(company)}/bots${rest}`;
  group
    .command('add')
    .description('register a bot: its token is read from standard input, or from --token-file')
    .argument('<company>', 'company id')
    .addOption(
      new Option('--messenger <messenger>', 'which messenger')
        .choices(messengerNames())
        .makeOptionMandatory(),
    )
    .requiredOption('--name <name>', "the bot's name within the company")
    .option('--token-file <path>', "a file holding the bot's token (else it is read from standard input)")
    .addOption(new Option('--token <token>').hideHelp())
    .option('--default', "make it its messenger's default bot", false)
    .addHelpText(
      'after',
      `\nExamples:\n  mds-admin bots add <company> --messenger ${example} --name shop --token-file ./${example}-token\n` +
        `  pass show ${example}/shop | mds-admin bots add <company> --messenger ${example} --name shop`,
    )
    .action(async (company: string, options: AddOptions, command: Command) => {
      if (options.token !== undefined)
        command.error(
          'error: --token is not accepted: a token on the command line stays in shell history and process ' +
            'listings. Pipe it on standard input or use --token-file <path>.',
          { exitCode: 2, code: 'mds.token_on_command_line' },
        );
      let token: string;
      try {
        token = await readSecret(cli.io, 'bot token', options.tokenFile, '--token-file <path>');
      } catch (error) {
        if (error instanceof SecretInputError)
          command.error(`error: ${error.message}`, { exitCode: 2, code: 'mds.secret_missing' });
        throw error;
      }
      await cli.call({
        method: 'POST',
        path: path(company),
        body: { messenger: options.messenger, name: options.name, token, default: options.default },
      });
    });
  group
    .command('list')
    .description('list bots')
    .argument('<company>', 'company id')
    .action((company: string) => cli.call({ method: 'GET', path: path(company) }));
  group
    .command('remove')
    .description('remove a bot')
    .argument('<company>', 'company id')
    .argument('<bot-id>', 'bot id')
    .action((company: string, botId: string) =>
      cli.call(
        { method: 'DELETE', path: path(company, `/${segment(botId)}`) },
        { headline: () => `removed ${botId}` },
      ),
    );
  group
    .command('default')
    .description("make a bot its messenger's default")
    .argument('<company>', 'company id')
    .argument('<bot-id>', 'bot id')
    .action((company: string, botId: string) =>
      cli.call({ method: 'PUT', path: path(company, `/${segment(botId)}/default`) }),
    );
  group
    .command('check')
    .description("ask the messenger whether the bot's token still works (changes nothing)")
    .argument('<company>', 'company id')
    .argument('<bot-id>', 'bot id')
    .action((company: string, botId: string) =>
      cli.call({ method: 'POST', path: path(company, `/${segment(botId)}/check`) }),
    );
};
