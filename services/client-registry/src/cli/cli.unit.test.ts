import { mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { type Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { MDS_ADMIN, mdsAdmin } from '../../test/mds-admin.js';
import { CliContext } from './context.js';
import { buildProgram, runCli } from './program.js';

const SPAWN_TIMEOUT = 30_000;
const token = { REGISTRY_ADMIN_TOKEN: 'registry-test-admin-token' };

/** Every command that does something (leaves of the command tree), as its words: ['bots', 'add']... */
function leafCommands(command: Command, words: string[] = []): string[][] {
  const children = command.commands.filter((c) => c.name() !== 'help');
  if (children.length === 0) return [words];
  return children.flatMap((child) => leafCommands(child, [...words, child.name()]));
}

/** A port nothing listens on: one the system gave a server that then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('mds-admin, run through its bin', () => {
  it(
    'prints usage with every command for --help and -h, and exits 0',
    async () => {
      for (const flag of ['--help', '-h']) {
        const run = await mdsAdmin([flag]);
        expect(run).toMatchObject({ code: 0, stderr: '' });
        expect(run.stdout).toMatch(/^Usage: mds-admin \[options\] \[command\]/);
        for (const group of ['companies', 'keys', 'webhook', 'bots', 'clients', 'members'])
          expect(run.stdout).toMatch(new RegExp(`^  ${group} `, 'm'));
        expect(run.stdout).toContain('REGISTRY_ADMIN_TOKEN');
      }
      const nested = await mdsAdmin(['bots', 'add', '-h']);
      expect(nested).toMatchObject({ code: 0, stderr: '' });
      expect(nested.stdout).toMatch(/^Usage: mds-admin bots add \[options\] <company>/);
      expect(nested.stdout).toContain('--token-file <path>');
      expect(nested.stdout).not.toMatch(/--token </);
      const viaHelp = await mdsAdmin(['help', 'keys']);
      expect(viaHelp).toMatchObject({ code: 0 });
      expect(viaHelp.stdout).toMatch(/^Usage: mds-admin keys /);
    },
    SPAWN_TIMEOUT,
  );

  it('has help on every command', async () => {
    const leaves = leafCommands(
      buildProgram(
        new CliContext({ env: {}, stdin: new PassThrough(), stdout: process.stdout, stderr: process.stderr }),
      ),
    );
    expect(leaves.length).toBeGreaterThanOrEqual(17);
    for (const words of leaves) {
      let out = '';
      const sink = { write: (text: string) => (out += text) };
      const code = await runCli([...words, '--help'], {
        env: {},
        stdin: new PassThrough(),
        stdout: sink,
        stderr: sink,
      });
      expect({ words, code }).toEqual({ words, code: 0 });
      expect(out).toContain(`Usage: mds-admin ${words.join(' ')} `);
    }
  });

  it(
    'prints its version for --version and -V',
    async () => {
      const { version } = JSON.parse(
        await readFile(join(import.meta.dirname, '../../package.json'), 'utf8'),
      ) as {
        version: string;
      };
      expect(await mdsAdmin(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
      expect(await mdsAdmin(['-V'])).toMatchObject({ code: 0, stdout: `${version}\n` });
    },
    SPAWN_TIMEOUT,
  );

  it(
    'suggests the command or option meant, and exits 2 on a usage error with a pointer to the usage',
    async () => {
      const command = await mdsAdmin(['compnies', 'list'], { env: token });
      expect(command).toMatchObject({ code: 2, stdout: '' });
      expect(command.stderr).toContain("unknown command 'compnies'");
      expect(command.stderr).toContain('Did you mean companies?');
      // The usage follows the error.
      expect(command.stderr).toMatch(/\nUsage: mds-admin \[options\] \[command\]\n/);
      const sub = await mdsAdmin(['webhook', 'rotat', 'c1'], { env: token });
      expect(sub).toMatchObject({ code: 2 });
      expect(sub.stderr).toContain('Did you mean rotate?');
      const option = await mdsAdmin(['companies', 'list', '--jsn'], { env: token });
      expect(option).toMatchObject({ code: 2 });
      expect(option.stderr).toContain('Did you mean --json?');
      const missing = await mdsAdmin(['companies', 'create'], { env: token });
      expect(missing).toMatchObject({ code: 2, stdout: '' });
      expect(missing.stderr).toMatch(
        /^error: required option '--name <name>' not specified\n\nUsage: mds-admin companies create \[options\]\n/,
      );
      const choice = await mdsAdmin(['members', 'add', 'c1', '--email', 'a@b.test', '--role', 'boss']);
      expect(choice).toMatchObject({ code: 2 });
      expect(choice.stderr).toMatch(/Allowed choices are owner, developer, viewer/);
      const nothing = await mdsAdmin([]);
      expect(nothing.code).toBe(2);
      expect(nothing.stderr).toMatch(/^Usage: mds-admin/);
    },
    SPAWN_TIMEOUT,
  );

  it(
    'never takes a bot token on the command line, and says how to give one',
    async () => {
      const add = ['bots', 'add', 'c1', '--messenger', 'telegram', '--name', 'shop'];
      const onCommandLine = await mdsAdmin([...add, '--token', '123:secret'], { env: token });
      expect(onCommandLine).toMatchObject({ code: 2, stdout: '' });
      expect(onCommandLine.stderr).toContain('--token is not accepted');
      expect(onCommandLine.stderr).toContain('--token-file');
      const noStdin = await mdsAdmin(add, { env: token, input: '\n' });
      expect(noStdin).toMatchObject({ code: 2, stdout: '' });
      expect(noStdin.stderr).toContain('no bot token on standard input');
      const dir = await mkdtemp(join(tmpdir(), 'mds-admin-'));
      const noFile = await mdsAdmin([...add, '--token-file', join(dir, 'absent')], { env: token });
      expect(noFile).toMatchObject({ code: 2 });
      expect(noFile.stderr).toContain(`cannot read bot token from ${join(dir, 'absent')}: ENOENT`);
      await writeFile(join(dir, 'empty'), '\n');
      const emptyFile = await mdsAdmin([...add, '--token-file', join(dir, 'empty')], { env: token });
      expect(emptyFile).toMatchObject({ code: 2 });
      expect(emptyFile.stderr).toContain(`${join(dir, 'empty')} is empty`);
    },
    SPAWN_TIMEOUT,
  );

  it(
    'names the variable that is missing, and the URL and the cause when the registry cannot be reached',
    async () => {
      const unset = await mdsAdmin(['companies', 'list']);
      expect(unset).toEqual({
        code: 2,
        stdout: '',
        stderr: "mds-admin: REGISTRY_ADMIN_TOKEN is not set (the registry's admin token)\n",
      });
      const port = await closedPort();
      const url = `http://127.0.0.1:${port}`;
      const unreachable = await mdsAdmin(['companies', 'list'], { env: { ...token, REGISTRY_URL: url } });
      expect(unreachable).toEqual({
        code: 1,
        stdout: '',
        stderr: `mds-admin: cannot reach the registry at ${url} (GET ${url}/admin/v1/companies): connect ECONNREFUSED 127.0.0.1:${port}\n`,
      });
      const members = await mdsAdmin(['members', 'list', 'c1'], {
        env: { DASHBOARD_ADMIN_TOKEN: 'x', DASHBOARD_URL: `${url}/` },
      });
      expect(members).toMatchObject({ code: 1 });
      expect(members.stderr).toContain(
        `cannot reach the dashboard at ${url} (GET ${url}/admin/v1/companies/c1/members)`,
      );
    },
    SPAWN_TIMEOUT,
  );

  it(
    'works through a symlink to its bin, as installed bins are',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'mds-admin-'));
      const link = join(dir, 'mds-admin');
      await symlink(MDS_ADMIN, link);
      const run = await mdsAdmin(['--help'], { bin: link });
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^Usage: mds-admin/);
      const failing = await mdsAdmin(['companies', 'list'], { bin: link });
      expect(failing).toMatchObject({ code: 2, stderr: expect.stringContaining('REGISTRY_ADMIN_TOKEN') });
    },
    SPAWN_TIMEOUT,
  );

  it(
    'runs built, as `npx mds-admin` from the repository root',
    async () => {
      const run = await mdsAdmin(['--help'], { built: true });
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(/^Usage: mds-admin/);
    },
    SPAWN_TIMEOUT,
  );
});
