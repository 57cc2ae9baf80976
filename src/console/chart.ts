/**
 * The console's one chart: stacked bars over a recent span (by default the last hour, one bar per
 * minute), drawn as server-rendered SVG (no script, no chart library), with a text summary for
 * screen readers.
 */
import { e } from './html.ts';

/** A chart's span: how many slots, and how its axis and its summary name them. */
export interface ChartSpan {
  slots: number;
  /** The axis label under the first slot (`60 min ago`). */
  from: string;
  /** `Per minute over the last hour`. */
  per: string;
  /** `last hour`. */
  span: string;
}

const LAST_HOUR: ChartSpan = { slots: 60, from: '60 min ago', per: 'Per minute over the last hour', span: 'last hour' };

/**
 * One bar chart: `series` are stacked bars (one colour each) over the span's slots (60 one-minute
 * slots by default), newest on the right. The SVG has a title and a description, and a text
 * summary follows it for screen readers.
 */
export function barChart(o: {
  id: string;
  title: string;
  series: { label: string; colour: string; values: number[] }[];
  span?: ChartSpan;
}): string {
  const span = o.span ?? LAST_HOUR;
  const W = 640;
  const H = 180;
  const pad = { l: 40, r: 10, t: 10, b: 30 };
  const slots = span.slots;
  const n = Math.max(...o.series.map((s) => s.values.length), 0);
  const sums = Array.from({ length: n }, (_, i) => o.series.reduce((s, x) => s + (x.values[i] ?? 0), 0));
  const max = Math.max(1, ...sums);
  const bw = (W - pad.l - pad.r) / slots;
  const y = (v: number) => pad.t + (H - pad.t - pad.b) * (1 - v / max);
  const bars: string[] = [];
  for (let i = 0; i < n; i++) {
    const x = pad.l + (slots - n + i) * bw;
    let base = 0;
    for (const s of o.series) {
      const v = s.values[i] ?? 0;
      if (v > 0) {
        bars.push(
          `<rect x="${x.toFixed(1)}" y="${y(base + v).toFixed(1)}" width="${Math.max(1, bw - 2).toFixed(1)}" height="${(y(base) - y(base + v)).toFixed(1)}" fill="${s.colour}"><title>${e(s.label)}: ${v}</title></rect>`,
        );
      }
      base += v;
    }
  }
  const totals = o.series.map((s) => `${s.label}: ${s.values.reduce((a, b) => a + b, 0)}`).join(', ');
  return `<figure class="card">
<svg role="img" aria-labelledby="${o.id}-t ${o.id}-d" viewBox="0 0 ${W} ${H}" width="100%" preserveAspectRatio="xMinYMin meet">
<title id="${o.id}-t">${e(o.title)}</title>
<desc id="${o.id}-d">${e(span.per)}. Totals: ${e(totals)}.</desc>
<line x1="${pad.l}" y1="${H - pad.b}" x2="${W - pad.r}" y2="${H - pad.b}" stroke="#555"/>
<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${H - pad.b}" stroke="#555"/>
<text x="${pad.l - 6}" y="${pad.t + 10}" text-anchor="end">${max}</text>
<text x="${pad.l - 6}" y="${H - pad.b}" text-anchor="end">0</text>
<text x="${pad.l}" y="${H - 8}">${e(span.from)}</text>
<text x="${W - pad.r}" y="${H - 8}" text-anchor="end">now</text>
${bars.join('\n')}
</svg>
<figcaption><strong>${e(o.title)}</strong> (${e(span.span)}): ${o.series
    .map(
      (s) =>
        `<span><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${s.colour}"/></svg> ${e(s.label)} ${s.values.reduce((a, b) => a + b, 0)}</span>`,
    )
    .join(' ')}</figcaption>
</figure>`;
}
