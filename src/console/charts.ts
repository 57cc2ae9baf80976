/**
 * The overview page's charts: token issuance and webhook deliveries over the last hour, one bar per
 * minute, drawn as server-rendered SVG (no script, no chart library). The numbers come from the
 * process's own Prometheus counters (`gatehouse_oauth2_tokens_issued_total`,
 * `gatehouse_webhook_deliveries_total`), sampled once a minute; so they cover what this process
 * did since it started (a worker running in another process keeps its own counters: scrape
 * `/admin/metrics/prometheus` of every process for the whole picture).
 */
import type { Context } from 'koa';
import { registry } from '../core/observability/metrics.ts';
import { e } from './html.ts';
import type { ConsoleEnv } from './index.ts';

const MINUTE = 60_000;
const POINTS = 61;

interface Sample {
  at: number;
  tokens: number;
  delivered: number;
  failed: number;
}

async function total(name: string, label?: [string, string]): Promise<number> {
  const m = registry.getSingleMetric(name);
  if (!m) return 0;
  const v = await m.get();
  return v.values
    .filter((x) => !label || (x.labels as Record<string, unknown>)[label[0]] === label[1])
    .reduce((s, x) => s + x.value, 0);
}

async function read(at: number): Promise<Sample> {
  return {
    at,
    tokens: await total('gatehouse_oauth2_tokens_issued_total'),
    delivered: await total('gatehouse_webhook_deliveries_total', ['outcome', 'delivered']),
    failed: await total('gatehouse_webhook_deliveries_total', ['outcome', 'failed']),
  };
}

const samples: Sample[] = [];
let timer: NodeJS.Timeout | undefined;

/** Starts the once-a-minute sampling of this process (one timer per process, never keeps it alive). */
export function startSampler(): void {
  if (timer) return;
  const tick = async () => {
    samples.push(await read(Date.now()));
    while (samples.length > POINTS) samples.shift();
  };
  void tick();
  timer = setInterval(() => void tick(), MINUTE);
  timer.unref();
}

/** Per-minute increments of the last hour, oldest first, ending with the current (partial) minute. */
async function series(): Promise<{ tokens: number[]; delivered: number[]; failed: number[]; minutes: number }> {
  const now = await read(Date.now());
  const points = [...samples, now];
  const out = {
    tokens: [] as number[],
    delivered: [] as number[],
    failed: [] as number[],
    minutes: Math.max(0, samples.length - 1),
  };
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1] as Sample;
    const b = points[i] as Sample;
    out.tokens.push(Math.max(0, b.tokens - a.tokens));
    out.delivered.push(Math.max(0, b.delivered - a.delivered));
    out.failed.push(Math.max(0, b.failed - a.failed));
  }
  return out;
}

/**
 * One bar chart: `series` are stacked bars (one colour each) over 60 one-minute slots, newest on the
 * right. The SVG has a title and a description, and a text table follows it for screen readers.
 */
export function barChart(o: {
  id: string;
  title: string;
  series: { label: string; colour: string; values: number[] }[];
}): string {
  const W = 640;
  const H = 180;
  const pad = { l: 40, r: 10, t: 10, b: 30 };
  const slots = 60;
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
<desc id="${o.id}-d">Per minute over the last hour. Totals: ${e(totals)}.</desc>
<line x1="${pad.l}" y1="${H - pad.b}" x2="${W - pad.r}" y2="${H - pad.b}" stroke="#555"/>
<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${H - pad.b}" stroke="#555"/>
<text x="${pad.l - 6}" y="${pad.t + 10}" text-anchor="end">${max}</text>
<text x="${pad.l - 6}" y="${H - pad.b}" text-anchor="end">0</text>
<text x="${pad.l}" y="${H - 8}">60 min ago</text>
<text x="${W - pad.r}" y="${H - 8}" text-anchor="end">now</text>
${bars.join('\n')}
</svg>
<figcaption><strong>${e(o.title)}</strong> (last hour): ${o.series
    .map(
      (s) =>
        `<span><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${s.colour}"/></svg> ${e(s.label)} ${s.values.reduce((a, b) => a + b, 0)}</span>`,
    )
    .join(' ')}</figcaption>
</figure>`;
}

export async function overviewPage(env: ConsoleEnv, ctx: Context): Promise<void> {
  const s = await series();
  const c = env.c;
  const note = c.config.metrics.enabled
    ? `<p class="muted">Counted by this process since it started (${s.minutes} whole minute(s) so far; the last bar is the current minute).</p>`
    : '<p class="error">Metrics are off (metrics.enabled: false): the charts stay empty.</p>';
  const body = `<h2>Activity</h2>
${note}
<div class="cards">
${barChart({ id: 'chart-tokens', title: 'Tokens issued', series: [{ label: 'tokens', colour: '#0b4f9c', values: s.tokens }] })}
${barChart({
  id: 'chart-webhooks',
  title: 'Webhook deliveries',
  series: [
    { label: 'delivered', colour: '#1d7a35', values: s.delivered },
    { label: 'failed', colour: '#a00000', values: s.failed },
  ],
})}
</div>
<h2>Sections</h2>
<ul>
<li><a href="/console/clients">OAuth2 clients</a>: create, edit, rotate secrets, delete.</li>
<li><a href="/console/keys">Key sets</a>: list, add and rotate keys.</li>
<li><a href="/console/sessions">Sessions</a>: a subject's login and consent sessions.</li>
<li><a href="/console/trust">Trust</a>: trusted JWT bearer grant issuers.</li>
<li><a href="/console/directories">Directories</a>: SCIM directories, users, groups, setup links.</li>
<li><a href="/console/webhooks">Webhooks</a>: events and delivery logs.</li>
<li><a href="/console/jobs">Jobs</a>: the job queue, failed jobs, retry.</li>
</ul>`;
  env.page(ctx, 'Overview', body);
}
