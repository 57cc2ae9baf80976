/**
 * The console's overview page: token issuance and webhook deliveries over the last hour, one bar per
 * minute, and the sections of the console. The numbers come from the process's own Prometheus
 * counters (`gatehouse_oauth2_tokens_issued_total`, `gatehouse_webhook_deliveries_total`), sampled
 * once a minute from the moment the console is mounted; so they cover what this process did since
 * (a worker running in another process keeps its own counters: scrape `/admin/metrics/prometheus`
 * of every process for the whole picture).
 */
import type { Registrar } from '../../core/http/routes.ts';
import { registry } from '../../core/observability/metrics.ts';
import { barChart } from '../chart.ts';
import type { ConsoleEnv } from '../env.ts';

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

/** Samples the counters once a minute (a timer that never keeps the process alive) and keeps the last hour. */
function startSampler() {
  const samples: Sample[] = [];
  const tick = async () => {
    samples.push(await read(Date.now()));
    while (samples.length > POINTS) samples.shift();
  };
  void tick();
  setInterval(() => void tick(), MINUTE).unref();

  /** Per-minute increments of the last hour, oldest first, ending with the current (partial) minute. */
  return async function series(): Promise<{
    tokens: number[];
    delivered: number[];
    failed: number[];
    minutes: number;
  }> {
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
  };
}

export function overviewPages(env: ConsoleEnv, r: Registrar): void {
  const series = startSampler();

  r.get('/', async function consoleOverview(ctx) {
    const s = await series();
    const note = env.c.config.metrics.enabled
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
  });
}
