// CPU and memory of the stack's processes, read from /proc (Linux): utime + stime in clock ticks and
// VmRSS. PostgreSQL counts its postmaster and every backend it forked; Kafka is the broker's JVM.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_S = 100; // USER_HZ on Linux

interface Stat {
  ppid: number;
  ticks: number;
  /** CPU of its children that ended (a postmaster's exited backends). */
  endedChildrenTicks: number;
  rssKb: number;
}

function stat(pid: number): Stat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), starting at field 3 (state).
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return {
      ppid: Number(f[1]),
      ticks: Number(f[11]) + Number(f[12]),
      endedChildrenTicks: Number(f[13]) + Number(f[14]),
      rssKb: (Number(f[21]) * 4096) / 1024,
    };
  } catch {
    return undefined;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

const allPids = () =>
  readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);

/** The PostgreSQL server listening on `port` (its postmaster), if it runs on this machine. */
export function findPostgres(port: number): number | undefined {
  return allPids().find((pid) => {
    const c = cmdline(pid);
    return /(^|\/)postgres /.test(c) && c.includes(`port=${port}`);
  });
}

/** The Kafka broker whose listener is on `port`, if it runs on this machine. */
export function findKafka(port: number): number | undefined {
  return allPids().find((pid) => {
    const c = cmdline(pid);
    if (!c.includes('kafka.Kafka')) return false;
    const properties = c.trim().split(' ').at(-1)!;
    try {
      return readFileSync(properties, 'utf8').includes(`PLAINTEXT://127.0.0.1:${port}`);
    } catch {
      return false;
    }
  });
}

/** A process, or (withChildren) a process and its children, e.g. a postmaster and its backends. */
export interface Watched {
  name: string;
  pid: number;
  withChildren?: boolean;
}

export interface Usage {
  name: string;
  /** Share of one core over the interval (100 = one core busy). */
  cpuPercent: number;
  rssMb: number;
}

/** Samples CPU ticks now; `since` gives each process's CPU share between two samples. */
export class ProcessSampler {
  constructor(private readonly watched: Watched[]) {}

  sample(): { at: number; ticks: Map<string, number>; rssMb: Map<string, number> } {
    const ticks = new Map<string, number>();
    const rss = new Map<string, number>();
    const children = this.watched.some((w) => w.withChildren)
      ? allPids().map((p) => [p, stat(p)] as const)
      : [];
    for (const w of this.watched) {
      const own = stat(w.pid);
      let t = own?.ticks ?? 0;
      let kb = own?.rssKb ?? 0;
      if (w.withChildren) {
        t += own?.endedChildrenTicks ?? 0;
        for (const [, s] of children)
          if (s && s.ppid === w.pid) {
            t += s.ticks;
            kb += s.rssKb;
          }
      }
      ticks.set(w.name, t);
      rss.set(w.name, kb / 1024);
    }
    return { at: performance.now(), ticks, rssMb: rss };
  }

  static between(a: ReturnType<ProcessSampler['sample']>, b: ReturnType<ProcessSampler['sample']>): Usage[] {
    const seconds = (b.at - a.at) / 1000;
    return [...b.ticks].map(([name, t]) => ({
      name,
      cpuPercent: ((t - (a.ticks.get(name) ?? 0)) / TICKS_PER_S / seconds) * 100,
      rssMb: b.rssMb.get(name) ?? 0,
    }));
  }
}
