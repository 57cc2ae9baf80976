/**
 * The console's job queue page: graphile-worker jobs counted by task and state, the failed jobs
 * (out of attempts) with their last error, and re-enqueueing them (one, or every failed job of a
 * task) with a fresh attempt budget. It reads and retries through the core's job admin functions,
 * the same ones behind `gatehouse jobs failed` and `gatehouse jobs retry`, in the queue database
 * (`c.queue.db`: the data database unless `queue.dsn` puts graphile-worker in one of its own).
 */

import type { Context } from 'koa';
import type { Registrar } from '../../core/http/routes.ts';
import { countJobs, type JobState, listFailedJobs, retryFailedJobs } from '../../core/jobs/admin.ts';
import type { ConsoleEnv } from '../env.ts';
import { e, firstLine, postButton, table, when } from '../html.ts';

const STATES: JobState[] = ['waiting', 'scheduled', 'running', 'failed'];
const FAILED_SHOWN = 100;
const TASK_RE = /^[A-Za-z0-9_:.-]{1,100}$/;

/** Results of this page's actions, shown after the redirect (a fixed list, like the framework's). */
const RESULTS: Record<string, string> = {
  'jobs-retried': 'The failed job(s) were re-enqueued; they run with a fresh attempt budget.',
  'jobs-none': 'No failed job matched (it may have been retried already).',
};

export function jobPages(env: ConsoleEnv, r: Registrar): void {
  // Job state lives in the queue database (queue.dsn), not necessarily the data database.
  const db = env.c.queue.db;

  r.get('/jobs', async function consoleJobs(ctx: Context) {
    const csrf = env.session(ctx).csrf;
    const task = typeof ctx.query.task === 'string' && TASK_RE.test(ctx.query.task) ? ctx.query.task : '';
    const counts = await countJobs(db);
    const tasks = [...new Set(counts.map((x) => x.task))].sort();
    const byTask = new Map<string, Record<JobState, number>>();
    for (const x of counts) {
      const row = byTask.get(x.task) ?? { waiting: 0, scheduled: 0, running: 0, failed: 0 };
      row[x.state] += x.count;
      byTask.set(x.task, row);
    }
    const countRows = tasks.map((t) => {
      const row = byTask.get(t) as Record<JobState, number>;
      const total = STATES.reduce((s, k) => s + row[k], 0);
      return [
        `<code>${e(t)}</code>`,
        ...STATES.map((k) =>
          k === 'failed' && row[k] > 0
            ? `<a href="/console/jobs?task=${encodeURIComponent(t)}#failed">${row[k]}</a>`
            : String(row[k]),
        ),
        String(total),
      ];
    });
    const failed = await listFailedJobs(db, task ? { task } : {}, FAILED_SHOWN);
    const failedRows = failed.map((j) => [
      String(j.id),
      `<code>${e(j.task)}</code>`,
      j.queue ? `<code>${e(j.queue)}</code>` : '',
      `${j.attempts}/${j.maxAttempts}`,
      when(j.updatedAt),
      j.lastError
        ? `<details><summary>${e(firstLine(j.lastError).slice(0, 200))}</summary><pre>${e(j.lastError)}</pre></details>`
        : '<span class="muted">none recorded</span>',
      postButton('/console/jobs/retry', `Retry job ${j.id}`, csrf, { fields: { id: String(j.id) } }),
    ]);
    const filter = `<form method="get" action="/console/jobs" class="actions">
<label for="task-filter">Show failed jobs of task</label>
<select id="task-filter" name="task">
<option value="">every task</option>
${tasks.map((t) => `<option value="${e(t)}"${t === task ? ' selected' : ''}>${e(t)}</option>`).join('')}
</select>
<button type="submit" class="secondary">Show</button>
</form>`;
    const retryAll = failed.length
      ? postButton('/console/jobs/retry', task ? `Retry every failed ${task} job` : 'Retry every failed job', csrf, {
          fields: task ? { task } : { all: 'yes' },
        })
      : '';
    const body = `<p>Background jobs waiting, scheduled, running or failed, by task. Completed jobs are deleted and not counted.
A job is <strong>failed</strong> when it used up its attempts; it keeps its last error until it is retried.</p>
<h2>Jobs by task and state</h2>
${table('Jobs by task and state', ['Task', ...STATES.map((s) => s[0]?.toUpperCase() + s.slice(1)), 'Total'], countRows, 'The queue is empty.')}
<h2 id="failed">Failed jobs</h2>
${filter}
${table(
  task ? `Failed ${task} jobs (at most ${FAILED_SHOWN})` : `Failed jobs (at most ${FAILED_SHOWN})`,
  ['Job', 'Task', 'Queue', 'Attempts', 'Last attempt', 'Last error', 'Action'],
  failedRows,
  'No failed jobs.',
)}
<div class="actions">${retryAll}</div>`;
    const done = typeof ctx.query.done === 'string' ? RESULTS[ctx.query.done] : undefined;
    env.page(ctx, 'Jobs', body, { notice: done });
  });

  r.post('/jobs/retry', async function consoleJobsRetry(ctx: Context) {
    const ids = env
      .fields(ctx, 'id')
      .filter((x) => /^\d{1,18}$/.test(x))
      .map(Number);
    const task = env.field(ctx, 'task');
    const all = env.field(ctx, 'all') === 'yes';
    let retried: number[] = [];
    if (ids.length) retried = await retryFailedJobs(db, { ids });
    else if (task && TASK_RE.test(task)) retried = await retryFailedJobs(db, { task });
    else if (all) retried = await retryFailedJobs(db, {});
    if (retried.length) env.c.log.info({ operator: env.session(ctx).sub, jobs: retried }, 'console: jobs retried');
    ctx.status = 303;
    ctx.redirect(`/console/jobs?done=${retried.length ? 'jobs-retried' : 'jobs-none'}`);
  });
}
