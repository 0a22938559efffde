import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { spawnDaemon, waitUntil } from './processes.js';

/** Folder holding initdb and postgres: MDS_PG_BIN, then `pg_config --bindir`, then Debian's layout. */
export function findPostgresBin(env: NodeJS.ProcessEnv = process.env): string {
  const candidates: string[] = [];
  if (env.MDS_PG_BIN) candidates.push(env.MDS_PG_BIN);
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim());
  } catch {
    // no pg_config on PATH
  }
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    for (const version of readdirSync(debian).sort((a, b) => Number(b) - Number(a))) {
      candidates.push(join(debian, version, 'bin'));
    }
  }
  for (const dir of candidates) {
    if (existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'))) return dir;
  }
  throw new Error(
    'PostgreSQL is needed but no initdb/postgres binaries were found (looked at MDS_PG_BIN, pg_config --bindir, ' +
      '/usr/lib/postgresql/*/bin). Install it (Debian: apt-get install postgresql) or set DATABASE_URL.',
  );
}

/** PostgreSQL refuses to run as root: when we are root, the server runs as the `postgres` user. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    const result = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    if (result.status === 0) {
      const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' }).stdout.trim();
      return { uid: Number(result.stdout.trim()), gid: Number(gid) };
    }
  }
  throw new Error(
    'running as root, but there is neither a `postgres` nor a `nobody` user to run PostgreSQL as',
  );
}

export interface PostgresOptions {
  dir: string;
  port: number;
  database: string;
  /** Trade durability for speed: right for a throw-away test run, never for real data. */
  fast?: boolean;
  env?: NodeJS.ProcessEnv;
}

export interface StartedPostgres {
  pid: number;
  databaseUrl: string;
  logFile: string;
  version: string;
}

/** Where the data of the server of `dir` lives when its user cannot reach `dir` (see dataDirOf). */
const elsewhere = (dir: string) => join(dir, 'data.location');

/**
 * The server's data folder: `dir/data`, unless the server runs as another user (we are root) who cannot
 * reach `dir` (a clone inside a folder only root may enter, such as a fresh `mktemp -d`). Its data then
 * lives in a folder of its own under the system's temporary folder, named after `dir`, and `dir` notes where.
 */
function dataDirOf(dir: string, user: { uid: number; gid: number } | undefined): string {
  if (existsSync(elsewhere(dir))) return readFileSync(elsewhere(dir), 'utf8').trim();
  const local = join(dir, 'data');
  if (!user || existsSync(join(local, 'PG_VERSION'))) return local;
  const reach = spawnSync('sh', ['-c', 'cd "$1"', 'sh', dir], { uid: user.uid, gid: user.gid, cwd: '/' });
  if (reach.status === 0) return local;
  const base = join(tmpdir(), 'mds-postgres');
  mkdirSync(base, { recursive: true, mode: 0o755 });
  const place = join(base, createHash('sha256').update(dir).digest('hex').slice(0, 16));
  writeFileSync(elsewhere(dir), place);
  return place;
}

/** Removes the data of the server of `dir` kept outside it (see dataDirOf); `dir` itself is the caller's. */
export function removePostgresDataElsewhere(dir: string): void {
  if (existsSync(elsewhere(dir)))
    rmSync(readFileSync(elsewhere(dir), 'utf8').trim(), { recursive: true, force: true });
}

export async function startPostgres(o: PostgresOptions): Promise<StartedPostgres> {
  const env = o.env ?? process.env;
  const bin = findPostgresBin(env);
  const user = serverUser();
  mkdirSync(o.dir, { recursive: true });
  const dataDir = dataDirOf(o.dir, user);
  // Run from a folder the server's user may enter (initdb refuses to start in one it cannot).
  const ids = user ? { uid: user.uid, gid: user.gid, cwd: '/' } : {};
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    if (user) chownSync(dataDir, user.uid, user.gid);
    const init = spawnSync(
      join(bin, 'initdb'),
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
      { encoding: 'utf8', env, ...ids },
    );
    if (init.status !== 0) throw new Error(`initdb failed:\n${init.stdout}\n${init.stderr}`);
  }
  const logFile = join(o.dir, 'postgres.log');
  writeFileSync(logFile, '', { flag: 'a' });
  if (user) chownSync(logFile, user.uid, user.gid);
  const settings = [
    `port=${o.port}`,
    'listen_addresses=127.0.0.1',
    'unix_socket_directories=',
    'max_connections=300',
    'shared_buffers=128MB',
    ...(o.fast ? ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'] : []),
  ];
  const pid = spawnDaemon(join(bin, 'postgres'), ['-D', dataDir, ...settings.flatMap((s) => ['-c', s])], {
    logFile,
    env,
    ...ids,
  });
  const adminUrl = `postgres://postgres@127.0.0.1:${o.port}/postgres`;
  await waitUntil('PostgreSQL', () => answers(adminUrl), { timeoutMs: 30_000, intervalMs: 100 });
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('select 1 from pg_database where datname = $1', [o.database]);
    if (exists.rowCount === 0) await client.query(`create database "${o.database}"`);
    const version = (await client.query<{ server_version: string }>('show server_version')).rows[0]!
      .server_version;
    return { pid, databaseUrl: `postgres://postgres@127.0.0.1:${o.port}/${o.database}`, logFile, version };
  } finally {
    await client.end();
  }
}

export async function answers(databaseUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A new, empty database on a server; returns its URL. */
export async function createDatabase(serverUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`invalid database name "${name}"`);
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
