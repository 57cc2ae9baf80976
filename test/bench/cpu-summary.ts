/**
 * Summarises V8 CPU profiles (`node --cpu-prof`, e.g. from `BENCH_CPU_PROF=<dir> npm run bench`):
 * the top functions by self time, and the share of time by area (gatehouse's own code by folder,
 * node_modules by package, node internals, GC, idle).
 *
 *   node test/bench/cpu-summary.ts <file.cpuprofile> [top=25]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node test/bench/cpu-summary.ts <file.cpuprofile> [top]\n');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
for (const [i, id] of p.samples.entries()) self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
const total = [...self.values()].reduce((a, b) => a + b, 0);

function area(url: string, fn: string): string {
  if (fn === '(idle)') return '(idle)';
  if (fn === '(garbage collector)') return '(gc)';
  if (fn === '(program)') return '(program)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return `npm:${nm[1]}`;
  const src = /\/(src|test|tasks)\/(.*)\/[^/]+$/.exec(url);
  if (src) return `${src[1]}/${src[2]}`;
  if (url.startsWith('node:') || !url) return 'node internals';
  return url;
}

const fns = new Map<string, number>();
const areas = new Map<string, number>();
for (const [id, t] of self) {
  const n = byId.get(id);
  if (!n) continue;
  const { functionName, url, lineNumber } = n.callFrame;
  const short = url.replace(/^.*\/(node_modules|src|test|tasks)\//, '$1/');
  const k = `${functionName || '(anonymous)'} ${short}${url ? `:${lineNumber + 1}` : ''}`;
  fns.set(k, (fns.get(k) ?? 0) + t);
  const a = area(url, functionName);
  areas.set(a, (areas.get(a) ?? 0) + t);
}
const pct = (t: number) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
process.stdout.write(`${file}: ${(total / 1e6).toFixed(1)} s sampled\n\nby area:\n`);
for (const [k, t] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 15)) process.stdout.write(`  ${pct(t)}  ${k}\n`);
process.stdout.write('\ntop functions (self time):\n');
for (const [k, t] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`  ${pct(t)}  ${k}\n`);
