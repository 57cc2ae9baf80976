/**
 * `npm run bench:chart [-- <bench-results.json> [<out.svg>]]`: draws the growth scenario of a
 * benchmark run (scenarios/dsync-growth.ts) as an SVG line chart — creates per second in each round,
 * gatehouse and its peer, against the users the directory held when the round started — for
 * docs/performance.md ("Cost as data grows"). Default output: docs/img/dsync-growth.svg.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

interface Run {
  rps: number;
  requests: number;
}
interface Row {
  scenario: string;
  gatehouse: Run[];
  peer?: { kind: string; runs: Run[] };
}
interface Results {
  date: string;
  rows: Row[];
}

const file = process.argv[2] ?? process.env.BENCH_OUT ?? 'bench-results.json';
const out = process.argv[3] ?? 'docs/img/dsync-growth.svg';
const r = JSON.parse(readFileSync(file, 'utf8')) as Results;
const row = r.rows.find((x) => x.scenario.startsWith('SCIM POST /Users growth'));
if (!row) throw new Error(`${file} has no growth scenario (npm run bench -- growth)`);

const step = Number(/rounds of ([\d,]+)/.exec(row.scenario)?.[1]?.replaceAll(',', '') ?? 0);
const series = [
  { name: 'gatehouse', color: '#1f6feb', rates: row.gatehouse.map((x) => x.rps) },
  ...(row.peer ? [{ name: row.peer.kind, color: '#d1242f', rates: row.peer.runs.map((x) => x.rps) }] : []),
];
const rounds = Math.max(...series.map((s) => s.rates.length));
const [W, H, L, R, T, B] = [640, 320, 60, 20, 30, 50];
// A fifth of headroom above the highest point, where the legend goes.
const top = Math.ceil((Math.max(...series.flatMap((s) => s.rates)) * 1.2) / 250) * 250;
const x = (i: number) => L + (rounds > 1 ? (i / (rounds - 1)) * (W - L - R) : 0);
const y = (v: number) => T + (1 - v / top) * (H - T - B);
const text = (tx: number, ty: number, s: string, anchor = 'middle') =>
  `<text x="${tx.toFixed(1)}" y="${ty.toFixed(1)}" text-anchor="${anchor}">${s}</text>`;

const parts: string[] = [
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
  `<rect width="${W}" height="${H}" fill="#fff"/>`,
  text(W / 2, 18, `SCIM POST /Users into one growing directory: creates/s per round (${r.date.slice(0, 10)})`),
];
for (let v = 0; v <= top; v += top / 5) {
  parts.push(
    `<line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
    text(L - 6, y(v) + 4, String(Math.round(v)), 'end'),
  );
}
for (let i = 0; i < rounds; i++) {
  parts.push(text(x(i), H - B + 16, (i * step).toLocaleString('en')));
}
parts.push(text((L + W - R) / 2, H - 12, 'users in the directory when the round started'));
series.forEach((s, k) => {
  const pts = s.rates.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  parts.push(`<polyline points="${pts}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
  for (const [i, v] of s.rates.entries())
    parts.push(`<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" fill="${s.color}"/>`);
  parts.push(`<rect x="${W - R - 120}" y="${T + 4 + k * 18}" width="12" height="12" fill="${s.color}"/>`);
  parts.push(text(W - R - 102, T + 14 + k * 18, s.name, 'start'));
});
parts.push('</svg>');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${parts.join('\n')}\n`);
process.stdout.write(`wrote ${out}\n`);
