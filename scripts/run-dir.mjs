// Emptying the run directory of `npm start` (.run/dev), for `npm start -- --fresh` and `npm run reset`.
import { existsSync, lstatSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const root = join(import.meta.dirname, '..');

/** What the things `npm start` keeps in its run directory are, for the line that says what went. */
const KNOWN = {
  postgres: 'PostgreSQL: companies, API keys, bots, clients, webhooks',
  kafka: 'Kafka: every event',
  'messenger-simulator.sqlite': "the simulator's bots, people, chats and webhooks received",
  'demo.json': 'the demo company and its key',
  'secrets.json': 'local secrets',
  'state.json': 'process records',
};

/** The run directory of `npm start`: `.run/dev`, under MDS_RUN_DIR when set (as local-infra's runDir). */
export function devRunDir(env = process.env) {
  return resolve(env.MDS_RUN_DIR ?? join(root, '.run'), 'dev');
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

function sizeOf(path) {
  const stat = lstatSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

function readable(bytes) {
  const units = ['bytes', 'KB', 'MB', 'GB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/**
 * Removes the run directory and everything in it, and answers a line saying what that was. Refuses
 * (throws, removing nothing) while the Kafka or PostgreSQL recorded there still run: their data would
 * go from under them.
 */
export function emptyRunDir(dir) {
  const shown = relative(process.cwd(), dir) || dir;
  const names = existsSync(dir) ? readdirSync(dir).sort() : [];
  if (names.length === 0) return `nothing to remove: ${shown} holds nothing`;
  const stateFile = join(dir, 'state.json');
  const state = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : {};
  const running = [
    ['Kafka', state.kafka?.pid],
    ['PostgreSQL', state.postgres?.pid],
  ].filter(([, pid]) => pid !== undefined && isAlive(pid));
  if (running.length) {
    throw new Error(
      `${running.map(([what, pid]) => `${what} (pid ${pid})`).join(' and ')} of ${shown} still run: ` +
        'stop npm start (Ctrl-C) or run `npm run infra:down`, then try again',
    );
  }
  const size = sizeOf(dir);
  const what = names.map((name) => {
    const shownName = lstatSync(join(dir, name)).isDirectory() ? `${name}/` : name;
    return KNOWN[name] ? `${shownName} (${KNOWN[name]})` : shownName;
  });
  rmSync(dir, { recursive: true, force: true });
  return `removed ${shown} (${readable(size)}): ${what.join(', ')}`;
}
