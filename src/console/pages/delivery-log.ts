/**
 * The console's delivery log of a directory: every attempt to post to its webhook (newest first,
 * with a chart of the last hour), one attempt with the body sent, and re-enqueueing the directory's
 * failed deliveries.
 */
import { AppError } from '../../core/errors.ts';
import type { Registrar } from '../../core/http/routes.ts';
import { barChart } from '../chart.ts';
import { dirPath, loadDirectory, PAGE, pageOf, pager, subNav } from '../directory-nav.ts';
import type { ConsoleEnv } from '../env.ts';
import { e, firstLine, postButton, table, when } from '../html.ts';

/** The event type(s) of a logged webhook body: one event, or a batch array. */
function logEvents(payload: unknown): string {
  let v = payload;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return '';
    }
  }
  if (Array.isArray(v)) return `batch of ${v.length}`;
  const ev = (v as { event?: unknown } | null)?.event;
  return typeof ev === 'string' ? ev : '';
}

const pretty = (payload: unknown) => {
  if (typeof payload !== 'string') return JSON.stringify(payload, null, 2);
  try {
    return JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    return payload;
  }
};

const MINUTE = 60_000;
/** Pages of the delivery log the chart reads at most (so at most 500 attempts of the last hour). */
const CHART_PAGES = 10;

/** Per-minute delivered/failed attempts of the last hour (60 slots, oldest first) from a newest-first reader. */
export async function attemptsPerMinute(
  now: number,
  read: (page: number) => Promise<Array<{ created_at: string; delivered: boolean }>>,
): Promise<{ delivered: number[]; failed: number[]; complete: boolean }> {
  const end = Math.floor(now / MINUTE) * MINUTE + MINUTE;
  const start = end - 60 * MINUTE;
  const delivered = Array.from({ length: 60 }, () => 0);
  const failed = Array.from({ length: 60 }, () => 0);
  for (let p = 0; p < CHART_PAGES; p++) {
    const rows = await read(p);
    for (const l of rows) {
      const at = Date.parse(l.created_at);
      if (at < start) return { delivered, failed, complete: true };
      const slot = Math.min(59, Math.floor((at - start) / MINUTE));
      const series = l.delivered ? delivered : failed;
      series[slot] = (series[slot] ?? 0) + 1;
    }
    if (rows.length < PAGE) return { delivered, failed, complete: true };
  }
  return { delivered, failed, complete: false };
}

export function deliveryLogPages(env: ConsoleEnv, r: Registrar): void {
  const dsync = env.c.dsync.services;

  r.get('/directories/:id/webhook-logs', async function consoleDirectoryLogs(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const page = pageOf(ctx);
    const logs = await dsync.webhookLogs.list(
      { directoryId: d.id },
      { pageOffset: (page - 1) * PAGE, pageLimit: PAGE },
    );
    const rows = logs.map((l) => [
      `<a href="${dirPath(d.id)}/webhook-logs/${encodeURIComponent(l.id)}">${when(l.created_at)}</a>`,
      e(logEvents(l.payload)),
      String(l.status_code),
      l.delivered ? 'delivered' : '<strong>failed</strong>',
      String(l.attempt),
      e(firstLine(l.error)),
    ]);
    const perMinute = await attemptsPerMinute(env.c.clock.now().getTime(), (p) =>
      p === 0 && page === 1
        ? Promise.resolve(logs)
        : dsync.webhookLogs.list({ directoryId: d.id }, { pageOffset: p * PAGE, pageLimit: PAGE }),
    );
    const chart = barChart({
      id: 'chart-attempts',
      title: 'Delivery attempts',
      series: [
        { label: 'delivered', colour: '#1d7a35', values: perMinute.delivered },
        { label: 'failed', colour: '#a00000', values: perMinute.failed },
      ],
    });
    const body = `${subNav(ctx, d)}
<div class="cards">${chart}</div>
${perMinute.complete ? '' : `<p class="muted">The chart shows the newest ${CHART_PAGES * PAGE} attempts of the last hour only.</p>`}
${
  d.log_webhook_events
    ? '<p>Every delivery attempt to the webhook, newest first.</p>'
    : '<p class="notice">Delivery logging is off for this directory (<code>log_webhook_events</code>): new attempts are not recorded. Failed deliveries are on the <a href="/console/webhooks">Webhooks</a> page either way.</p>'
}
${table('Delivery attempts', ['Started', 'Event', 'Status code', 'Result', 'Attempt', 'Error'], rows, 'No delivery attempts recorded.')}
${pager(`${dirPath(d.id)}/webhook-logs`, page, logs.length, 'Delivery log')}
<div class="actions">${postButton(`${dirPath(d.id)}/webhooks/retry`, 'Re-enqueue failed deliveries of this directory', env.session(ctx).csrf)}</div>`;
    env.page(ctx, `Delivery log of ${d.name || d.id}`, body);
  });

  r.get('/directories/:id/webhook-logs/:lid', async function consoleDirectoryLog(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const l = await dsync.webhookLogs.get({ directoryId: d.id }, ctx.params.lid);
    if (!l) throw new AppError({ status: 404, code: 'not_found', description: 'No such delivery attempt.' });
    const body = `${subNav(ctx, d)}
<dl>
<dt>Started</dt><dd>${when(l.created_at)}</dd>
<dt>Completed</dt><dd>${when(l.completed_at)}</dd>
<dt>Endpoint</dt><dd><code>${e(l.webhook_endpoint)}</code></dd>
<dt>Status code</dt><dd>${l.status_code}</dd>
<dt>Result</dt><dd>${l.delivered ? 'delivered' : 'failed'}</dd>
<dt>Attempt</dt><dd>${l.attempt}</dd>
<dt>Error</dt><dd>${e(l.error ?? 'none')}</dd>
</dl>
<h2>Body sent</h2>
<pre>${e(pretty(l.payload))}</pre>`;
    env.page(ctx, 'Delivery attempt', body);
  });

  r.post('/directories/:id/webhooks/retry', async function consoleDirectoryRetry(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const rep = await dsync.webhooks.retry(d.id);
    env.c.log.info({ operator: env.session(ctx).sub, directoryId: d.id, ...rep }, 'console: deliveries re-enqueued');
    ctx.status = 303;
    ctx.redirect(`/console/webhooks?done=${rep.jobs + rep.batches ? 'webhooks-retried' : 'webhooks-none'}`);
  });
}
