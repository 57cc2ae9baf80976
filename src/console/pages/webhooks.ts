/**
 * The console's webhooks page: the failed delivery jobs of every directory (and of the lifecycle
 * webhook), re-enqueued one by one or all at once through the core's job admin functions
 * (`gatehouse jobs failed|retry`) in the queue database (`c.queue.db`, where graphile-worker's
 * jobs are: a database of its own when `queue.dsn` is set), and each directory's events and
 * delivery log (data tables, in `c.db`).
 */
import type { Registrar } from '../../core/http/routes.ts';
import { listFailedJobs, retryFailedJobs } from '../../core/jobs/admin.ts';
import { DELIVER_TASK, isUuid, LIFECYCLE_TASK } from '../../dsync/index.ts';
import { dirPath, done, PAGE } from '../directory-nav.ts';
import type { ConsoleEnv } from '../env.ts';
import { e, firstLine, postButton, table, when } from '../html.ts';

const yesNo = (b: boolean) => (b ? 'yes' : 'no');

export function webhookPages(env: ConsoleEnv, r: Registrar): void {
  const dsync = env.c.dsync.services;

  r.get('/webhooks', async function consoleWebhooks(ctx) {
    const csrf = env.session(ctx).csrf;
    const failed = [
      ...(await listFailedJobs(env.c.queue.db, { task: DELIVER_TASK }, 100)),
      ...(await listFailedJobs(env.c.queue.db, { task: LIFECYCLE_TASK }, 100)),
    ];
    const names = new Map<string, string>();
    for (const j of failed) {
      const id = j.queue?.startsWith('dsync:') ? j.queue.slice('dsync:'.length) : '';
      if (id && isUuid(id) && !names.has(id)) {
        const d = await dsync.directories.load(id);
        names.set(id, d ? d.name || d.id : '');
      }
    }
    const rows = failed.map((j) => {
      const id = j.queue?.startsWith('dsync:') ? j.queue.slice('dsync:'.length) : '';
      const name = names.get(id);
      return [
        String(j.id),
        j.task === LIFECYCLE_TASK
          ? 'lifecycle webhook (<code>dsync.webhook_url</code>)'
          : name
            ? `<a href="${dirPath(id)}/webhook-logs">${e(name)}</a>`
            : `<span class="muted">deleted directory</span>`,
        `${j.attempts}/${j.maxAttempts}`,
        when(j.updatedAt),
        j.lastError
          ? `<details><summary>${e(firstLine(j.lastError).slice(0, 200))}</summary><pre>${e(j.lastError)}</pre></details>`
          : '',
        postButton('/console/webhooks/retry', `Re-enqueue delivery job ${j.id}`, csrf, {
          fields: { job: String(j.id) },
        }),
      ];
    });
    const dirs = await dsync.directories.list({ pageOffset: 0, pageLimit: PAGE });
    const dirRows = dirs.map((d) => [
      `<a href="${dirPath(d.id)}">${e(d.name || d.id)}</a>`,
      d.webhook.endpoint ? `<code>${e(d.webhook.endpoint)}</code>` : '<span class="muted">none</span>',
      yesNo(d.log_webhook_events),
      `<a href="${dirPath(d.id)}/events">Events</a>`,
      `<a href="${dirPath(d.id)}/webhook-logs">Delivery log</a>`,
    ]);
    const body = `<p>Each directory's events go to its webhook in order, one delivery job per directory. A job that used up its
attempts (<code>dsync.webhook.max_attempts</code>) stays failed and its events wait; re-enqueue it once the receiver works again
and delivery resumes, in order, from the first undelivered event.</p>
<h2>Failed deliveries</h2>
${table('Failed delivery jobs', ['Job', 'Directory', 'Attempts', 'Last attempt', 'Last error', 'Action'], rows, 'No failed deliveries.')}
<div class="actions">${postButton('/console/webhooks/retry-all', 'Re-enqueue every failed delivery', csrf, { cls: 'secondary' })}</div>
<h2>Events and delivery logs by directory</h2>
${table('Directories', ['Directory', 'Webhook', 'Logged', 'Events', 'Delivery log'], dirRows, 'No directories yet.')}
${dirs.length >= PAGE ? '<p><a href="/console/directories?page=2">More directories</a></p>' : ''}`;
    env.page(ctx, 'Webhooks', body, { notice: done(ctx) });
  });

  r.post('/webhooks/retry', async function consoleWebhookRetry(ctx) {
    const job = env.field(ctx, 'job');
    let ids: number[] = [];
    if (/^\d{1,18}$/.test(job)) {
      for (const task of [DELIVER_TASK, LIFECYCLE_TASK]) {
        ids = await retryFailedJobs(env.c.queue.db, { task, ids: [Number(job)] });
        if (ids.length) break;
      }
    }
    if (ids.length) env.c.log.info({ operator: env.session(ctx).sub, jobs: ids }, 'console: delivery re-enqueued');
    ctx.status = 303;
    ctx.redirect(`/console/webhooks?done=${ids.length ? 'webhook-retried' : 'webhooks-none'}`);
  });

  r.post('/webhooks/retry-all', async function consoleWebhookRetryAll(ctx) {
    const rep = await dsync.webhooks.retry();
    env.c.log.info({ operator: env.session(ctx).sub, ...rep }, 'console: deliveries re-enqueued');
    ctx.status = 303;
    ctx.redirect(`/console/webhooks?done=${rep.jobs + rep.batches ? 'webhooks-retried' : 'webhooks-none'}`);
  });
}
