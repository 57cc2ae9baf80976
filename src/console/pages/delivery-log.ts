/**
 * The console's delivery log of a directory: one row per event queued for its webhook (pending
 * until its first attempt, then the outcome of the last) and one per batch POST, newest first, with
 * a chart of the attempts of the last hour; one row with the body sent; and re-enqueueing the
 * directory's failed deliveries.
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

/**
 * Per-minute delivered/failed attempts of the last hour (60 slots, oldest first) from a newest-first
 * reader. A row counts its attempts in the minute its last one ended: a delivered row one delivered
 * and `attempt - 1` failed, a failed row `attempt` failed, a pending row none.
 */
export async function attemptsPerMinute(
  now: number,
  read: (
    page: number,
  ) => Promise<Array<{ created_at: string; completed_at: string | null; delivered: boolean; attempt: number }>>,
): Promise<{ delivered: number[]; failed: number[]; complete: boolean }> {
  const end = Math.floor(now / MINUTE) * MINUTE + MINUTE;
  const start = end - 60 * MINUTE;
  const delivered = Array.from({ length: 60 }, () => 0);
  const failed = Array.from({ length: 60 }, () => 0);
  for (let p = 0; p < CHART_PAGES; p++) {
    const rows = await read(p);
    for (const l of rows) {
      // Rows are newest first by when they were queued: none after this one ended within the hour.
      if (Date.parse(l.created_at) < start) return { delivered, failed, complete: true };
      if (l.completed_at === null) continue;
      const at = Date.parse(l.completed_at);
      if (at < start) continue;
      const slot = Math.min(59, Math.floor((at - start) / MINUTE));
      const failures = l.delivered ? Math.max(0, l.attempt - 1) : Math.max(1, l.attempt);
      if (l.delivered) delivered[slot] = (delivered[slot] ?? 0) + 1;
      failed[slot] = (failed[slot] ?? 0) + failures;
    }
    if (rows.length < PAGE) return { delivered, failed, complete: true };
  }
  return { delivered, failed, complete: false };
}

/** A row's result: pending (queued, not tried yet), delivered, or failed. */
const result = (l: { status: string }) =>
  l.status === 'failed' ? '<strong>failed</strong>' : l.status === 'pending' ? 'pending' : 'delivered';

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
      l.status_code === null ? '–' : String(l.status_code),
      result(l),
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
    ? '<p>Every event queued for the webhook (pending until its first attempt, then the outcome of its last) and every batch POST, newest first.</p>'
    : '<p class="notice">Delivery logging is off for this directory (<code>log_webhook_events</code>): new deliveries are not recorded. Failed deliveries are on the <a href="/console/webhooks">Webhooks</a> page either way.</p>'
}
${table('Deliveries', ['Queued', 'Event', 'Status code', 'Result', 'Attempts', 'Error'], rows, 'No deliveries recorded.')}
${pager(`${dirPath(d.id)}/webhook-logs`, page, logs.length, 'Delivery log')}
<div class="actions">${postButton(`${dirPath(d.id)}/webhooks/retry`, 'Re-enqueue failed deliveries of this directory', env.session(ctx).csrf)}
${postButton(`${dirPath(d.id)}/webhook-logs/clear`, 'Clear the delivery log…', env.session(ctx).csrf, { cls: 'secondary' })}</div>`;
    env.page(ctx, `Delivery log of ${d.name || d.id}`, body);
  });

  r.get('/directories/:id/webhook-logs/:lid', async function consoleDirectoryLog(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const l = await dsync.webhookLogs.get({ directoryId: d.id }, ctx.params.lid);
    if (!l) throw new AppError({ status: 404, code: 'not_found', description: 'No such delivery.' });
    const body = `${subNav(ctx, d)}
<dl>
<dt>Queued</dt><dd>${when(l.created_at)}</dd>
<dt>Last attempt ended</dt><dd>${l.completed_at ? when(l.completed_at) : 'not yet'}</dd>
<dt>Took</dt><dd>${l.duration_ms === null ? '–' : `${l.duration_ms} ms`}</dd>
<dt>Endpoint</dt><dd><code>${e(l.webhook_endpoint)}</code></dd>
<dt>Status code</dt><dd>${l.status_code === null ? '–' : l.status_code}</dd>
<dt>Result</dt><dd>${result(l)}</dd>
<dt>Attempts</dt><dd>${l.attempt}</dd>
<dt>Error</dt><dd>${e(l.error ?? 'none')}</dd>
</dl>
<h2>${l.status === 'pending' ? 'Event queued' : 'Body sent'}</h2>
<pre>${e(pretty(l.payload))}</pre>`;
    env.page(ctx, 'Delivery', body);
  });

  r.post('/directories/:id/webhooks/retry', async function consoleDirectoryRetry(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const rep = await dsync.webhooks.retry(d.id);
    env.c.log.info({ operator: env.session(ctx).sub, directoryId: d.id, ...rep }, 'console: deliveries re-enqueued');
    ctx.status = 303;
    ctx.redirect(`/console/webhooks?done=${rep.jobs + rep.batches ? 'webhooks-retried' : 'webhooks-none'}`);
  });
}
