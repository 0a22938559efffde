import { spawn, type SpawnOptions } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Starts a long-running process detached from our process group (so a terminal's Ctrl-C reaches only
 * us, and we stop it in order), with its output appended to a log file.
 */
export function spawnDaemon(
  command: string,
  args: readonly string[],
  options: { logFile: string; env?: NodeJS.ProcessEnv; cwd?: string; uid?: number; gid?: number },
): number {
  const log = openSync(options.logFile, 'a');
  const spawnOptions: SpawnOptions = {
    detached: true,
    stdio: ['ignore', log, log],
    env: options.env ?? process.env,
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  };
  const child = spawn(command, args, spawnOptions);
  closeSync(log);
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  child.unref();
  return child.pid;
}

/** SIGTERM (or the given signal), then SIGKILL if the process is still there after the grace period. */
export async function stopProcess(
  pid: number,
  graceMs = 10_000,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return;
    await sleep(100);
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
  while (isAlive(pid)) await sleep(50);
}

export function canConnect(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

const LOWEST_PORT = 10_000;

/** Ports handed out by this process: never twice, though a caller may not have bound one yet. */
const handedOut = new Set<number>();

/** The first port the kernel gives outgoing connections (Linux: ip_local_port_range; 32768 elsewhere). */
function firstEphemeralPort(): number {
  try {
    const first = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    return Number.isInteger(first) && first > 2_000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free TCP port on the loopback interface, below the ephemeral range: a port the kernel handed out
 * (`listen(0)`) is one it may give the next outgoing connection too, and a busy run (hundreds of Kafka and
 * PostgreSQL connections) then takes it before the caller binds it.
 */
export async function freePort(): Promise<number> {
  const below = firstEphemeralPort();
  for (let attempt = 0; below - LOWEST_PORT >= 1_000 && attempt < 100; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (below - LOWEST_PORT));
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
  // No room below the ephemeral range (or none free there): whatever the kernel gives.
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  options: { timeoutMs: number; intervalMs?: number; onTimeout?: () => string },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(options.intervalMs ?? 200);
  }
  const detail = options.onTimeout?.() ?? '';
  throw new Error(
    `timed out after ${options.timeoutMs} ms waiting for ${what}${detail ? `\n${detail}` : ''}`,
  );
}
