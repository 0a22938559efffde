// Summarises a V8 CPU profile (.cpuprofile, as --cpu-prof writes it): self time by package or area and the
// busiest functions, optionally within a window (seconds from the profile's start), e.g. only a phase.
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export function summarise(file: string, o: { fromS?: number; toS?: number; top?: number } = {}): string {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let t = 0;
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    const s = t / 1e6;
    if ((o.fromS !== undefined && s < o.fromS) || (o.toS !== undefined && s > o.toS)) continue;
    const dt = p.timeDeltas[i + 1] ?? 0;
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + dt);
    total += dt;
  }
  const area = (url: string, fn: string) => {
    if (fn === '(idle)') return '(idle)';
    if (fn === '(garbage collector)') return '(gc)';
    if (fn === '(program)') return '(program)';
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    if (m) return m[1]!;
    const ours = /\/(packages|services)\/([^/]+)\//.exec(url);
    if (ours) return `${ours[1]}/${ours[2]}`;
    if (url.startsWith('node:') || url === '')
      return `node:${url.replace('node:', '').split('/')[0] || '(native)'}`;
    return url;
  };
  const byArea = new Map<string, number>();
  const byFn = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const a = area(n.callFrame.url, n.callFrame.functionName);
    byArea.set(a, (byArea.get(a) ?? 0) + us);
    const f = `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/.*node_modules\//, '').replace(/.*\/(packages|services)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
    byFn.set(f, (byFn.get(f) ?? 0) + us);
  }
  const busy = total - (byArea.get('(idle)') ?? 0);
  const lines = [
    `${file}: ${(total / 1e6).toFixed(1)} s profiled, ${(busy / 1e3).toFixed(0)} ms busy (${((100 * busy) / total).toFixed(1)} % of one core)`,
  ];
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
  for (const [a, us] of [...byArea]
    .filter(([a]) => a !== '(idle)')
    .sort((x, y) => y[1] - x[1])
    .slice(0, 14))
    lines.push(`  ${pct(us)}  ${a}`);
  lines.push('  busiest functions (self):');
  for (const [f, us] of [...byFn]
    .filter(([f]) => !f.startsWith('(idle)'))
    .sort((x, y) => y[1] - x[1])
    .slice(0, o.top ?? 20))
    lines.push(`  ${pct(us)}  ${f}`);
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, from, to, top] = process.argv.slice(2);
  console.log(
    summarise(file!, {
      ...(from ? { fromS: Number(from) } : {}),
      ...(to ? { toS: Number(to) } : {}),
      ...(top ? { top: Number(top) } : {}),
    }),
  );
}
