/**
 * `npm run bench:table [-- <bench-results.json>]`: prints the README's performance table from a
 * benchmark run (default `bench-results.json`, or BENCH_OUT): per scenario the median rate of
 * gatehouse, of its peer, and the ratio gatehouse ÷ peer (median of the per-round ratios), then a
 * line with the run's conditions. Paste it over the table in README.md.
 */
import { readFileSync } from 'node:fs';

interface Run {
  rps: number;
}
interface Row {
  scenario: string;
  connections: number;
  gatehouse: Run[];
  peer?: { kind: string; runs: Run[] };
  ratios: number[];
}
interface Results {
  date: string;
  node: string;
  rounds: number;
  seconds: number;
  smoke: boolean;
  cpus?: number;
  load?: number[];
  rows: Row[];
}

const file = process.argv[2] ?? process.env.BENCH_OUT ?? 'bench-results.json';
const r = JSON.parse(readFileSync(file, 'utf8')) as Results;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const rate = (x: number) => (x >= 100 ? Math.round(x).toLocaleString('en') : x.toFixed(1));

const out = ['| scenario | gatehouse /s | peer | peer /s | ratio |', '|---|---|---|---|---|'];
for (const row of r.rows) {
  const g = median(row.gatehouse.map((x) => x.rps));
  const p = row.peer ? median(row.peer.runs.map((x) => x.rps)) : undefined;
  const ratio = row.ratios.length ? `${median(row.ratios).toFixed(2)}×` : '—';
  out.push(
    `| ${row.scenario} (c=${row.connections}) | ${rate(g)} | ${row.peer?.kind ?? '—'} | ${p === undefined ? '—' : rate(p)} | ${ratio} |`,
  );
}
const load = r.load ? `, load average ${r.load.join(' → ')} on ${r.cpus} CPUs` : '';
out.push(
  '',
  `${r.date.slice(0, 10)}, node ${r.node}, ${r.rounds} alternating round(s) of ${r.seconds} s${load}${r.smoke ? ' (smoke run: not figures)' : ''}.`,
);
process.stdout.write(`${out.join('\n')}\n`);
