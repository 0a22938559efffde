import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { type CliIo } from './context.js';

/** A secret that could not be read: what to do instead. */
export class SecretInputError extends Error {}

/**
 * A secret (a bot token) from a file or from standard input, never from the command line, where shell history
 * and every process listing would keep it. Surrounding whitespace (the file's final newline) is dropped.
 */
export async function readSecret(io: CliIo, what: string, file: string | undefined, fileOption: string) {
  let secret: string;
  if (file !== undefined) {
    try {
      secret = await readFile(file, 'utf8');
    } catch (error) {
      throw new SecretInputError(`cannot read ${what} from ${file}: ${(error as Error).message}`);
    }
    if (!secret.trim()) throw new SecretInputError(`${file} is empty: it should hold ${what}`);
  } else {
    const how = `pipe it on standard input (mds-admin ... < file) or name a file with ${fileOption}`;
    if (io.stdin.isTTY) throw new SecretInputError(`no ${what} given: ${how}`);
    secret = await text(io.stdin);
    if (!secret.trim()) throw new SecretInputError(`no ${what} on standard input: ${how}`);
  }
  return secret.trim();
}
