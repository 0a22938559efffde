// mds-replay rebuild: a service's state from the log into a fresh schema, beside the live one (the
// gateway's read model here; client-registry's through its own rebuild bin).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Command, Option } from 'commander';
import { rebuildEventStates } from '../replay.js';
import {
  Failure,
  kafkaSettings,
  printJson,
  readOptions,
  replayOptions,
  type Io,
  type ReadFlags,
} from './shared.js';

const here = dirname(fileURLToPath(import.meta.url));

/** Finds client-registry's rebuild bin: MDS_REGISTRY_REBUILD_BIN, an installed workspace bin, or PATH. */
function registryRebuildBin(env: NodeJS.ProcessEnv): string {
  if (env.MDS_REGISTRY_REBUILD_BIN) return env.MDS_REGISTRY_REBUILD_BIN;
  for (let dir = here; dir !== dirname(dir); dir = dirname(dir)) {
    const bin = join(dir, 'node_modules/.bin/mds-registry-rebuild');
    if (existsSync(bin)) return bin;
  }
  return 'mds-registry-rebuild';
}

function spawnRebuild(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (error) =>
      reject(
        new Failure(
          `cannot run client-registry's rebuild (${bin}): ${error.message}; install @mds/client-registry or set MDS_REGISTRY_REBUILD_BIN`,
        ),
      ),
    );
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

export function addRebuildCommand(root: Command, io: Io): void {
  readOptions(
    root
      .command('rebuild')
      .description("rebuild a service's state from the log into a fresh schema, beside the live one")
      .addOption(
        new Option('--service <name>', 'whose state')
          .choices(['gateway', 'client-registry'])
          .default('gateway'),
      )
      .requiredOption('--schema <name>', 'the fresh schema to rebuild into'),
  ).action(async (flags: ReadFlags & { service: string; schema: string }) => {
    const { settings, databaseUrl } = kafkaSettings(io);
    if (!databaseUrl) throw new Failure('rebuild needs DATABASE_URL (where the schema is made)', 2);
    if (flags.service === 'client-registry') {
      if (flags.from || flags.to || flags.company)
        throw new Failure(
          "client-registry's state is rebuilt from its whole log: no --from, --to or --company",
          2,
        );
      const bin = registryRebuildBin(io.env);
      const r = await spawnRebuild(bin, ['--schema', flags.schema, '--json'], io.env);
      if (r.code !== 0)
        throw new Failure(
          `client-registry's rebuild (${bin}) failed: ${r.stderr.trim() || `exit ${r.code}`}`,
        );
      const { events } = JSON.parse(r.stdout) as { events: number };
      if (flags.json) return printJson(io, { service: 'client-registry', schema: flags.schema, events });
      io.out(`rebuilt client-registry's state from ${events} events into schema ${flags.schema}\n`);
      return;
    }
    const r = await rebuildEventStates({
      ...replayOptions(io, flags, settings),
      databaseUrl,
      schema: flags.schema,
    });
    if (flags.json) return printJson(io, { service: 'gateway', schema: flags.schema, ...r });
    io.out(`rebuilt ${r.states} states from ${r.events} events into schema ${flags.schema}\n`);
  });
}
