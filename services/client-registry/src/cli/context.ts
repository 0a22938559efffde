import { type Command } from 'commander';
import { type Call, callAdminApi, type Target } from './admin-api.js';
import { human } from './output.js';

/** What a command can read and where it writes: the process's by default, a test's or another program's when given. */
export type CliIo = {
  env: NodeJS.ProcessEnv;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
};

/** What every command gets: the admin APIs and the output, which follows --json. */
export class CliContext {
  json = false;

  constructor(readonly io: CliIo) {}

  /**
   * Calls an admin API (the registry's unless told) and prints its answer: for a person `headline` first, and
   * `view` of the answer where the whole answer would be too much to read (--json prints it all, as it is).
   */
  async call(
    call: Call,
    options: {
      target?: Target;
      headline?: (body: unknown) => string;
      view?: (body: unknown) => unknown;
    } = {},
  ) {
    const body = await callAdminApi(this.io.env, options.target ?? 'registry', call);
    this.print(body, options.headline?.(body), options.view);
  }

  print(body: unknown, headline?: string, view?: (body: unknown) => unknown) {
    if (this.json) {
      this.io.stdout.write(`${JSON.stringify(body ?? null, null, 2)}\n`);
      return;
    }
    this.io.stdout.write(
      `${headline ? `${headline}\n` : ''}${body === undefined && headline ? '' : `${human(view && body !== undefined ? view(body) : body)}\n`}`,
    );
  }
}

/**
 * One command group of mds-admin (companies, keys, bots...): it adds its commands to the program. A new group is
 * a new module listed in commands/index.ts.
 */
export type CommandModule = (program: Command, cli: CliContext) => void;

/** A path segment from an argument. */
export const segment = encodeURIComponent;
