/**
 * The admin API of background jobs (family `jobs`, `gatehouse:admin:jobs`):
 *
 * - `GET /admin/jobs/failed`: the jobs that ran out of attempts (dead, not running), oldest first,
 *   filtered by `task` and `queue`, at most `limit` (1–1000, default 100); `X-Total-Count` counts
 *   every match. Each job's last error passes the log sanitiser (tokens, keys, credentials in URLs
 *   and IP addresses redacted).
 * - `POST /admin/jobs/retry`: re-enqueues dead jobs now with a fresh attempt budget; the JSON body
 *   names exactly one of `task`, `queue`, `ids` (job ids) or `all: true`, and the answer counts them.
 *
 * Both run the core's job admin functions (core/jobs/admin.ts), the same as `gatehouse jobs failed`
 * and `gatehouse jobs retry` and the console's Jobs page, on the queue's database (`queue.dsn`).
 */
import type { Context } from 'koa';
import { z } from 'zod';
import type { Executor } from '../db/tx.ts';
import { AppError, HERODOT } from '../errors.ts';
import type { Registrar } from '../http/routes.ts';
import { sanitizeLogValue } from '../log.ts';
import { countFailedJobs, type FailedJob, type JobFilter, listFailedJobs, retryFailedJobs } from './admin.ts';

const bad = (description: string) => new AppError({ status: 400, code: HERODOT.badRequest, description });

/** A task identifier or a queue name: graphile-worker's are free text, ours are of these characters. */
const NAME = /^[\w:.-]{1,200}$/;
const LIST_MAX = 1000;
const LIST_DEFAULT = 100;
/** Ids one retry may name. */
const IDS_MAX = 1000;

/** One query parameter, given at most once. @throws 400 when repeated or not matching `re` */
function single(ctx: Context, name: string, re: RegExp, what: string): string | undefined {
  const v = ctx.query[name];
  if (v === undefined) return undefined;
  if (Array.isArray(v)) throw bad(`Parameter '${name}' must be given at most once.`);
  if (!re.test(v)) throw bad(`Parameter '${name}' must be ${what}.`);
  return v;
}

const NAME_TEXT = '1 to 200 letters, digits, `_`, `:`, `.` or `-`';

export const renderFailedJob = (j: FailedJob) => ({
  id: j.id,
  task: j.task,
  queue: j.queue,
  key: j.key,
  attempts: j.attempts,
  max_attempts: j.maxAttempts,
  last_error: j.lastError === null ? null : (sanitizeLogValue(j.lastError) as string),
  run_at: j.runAt.toISOString(),
  created_at: j.createdAt.toISOString(),
  updated_at: j.updatedAt.toISOString(),
});

const retryBody = z.strictObject({
  task: z.string().regex(NAME).optional(),
  queue: z.string().regex(NAME).optional(),
  ids: z.array(z.number().int().positive().max(Number.MAX_SAFE_INTEGER)).min(1).max(IDS_MAX).optional(),
  all: z.literal(true).optional(),
});
const RETRY_CHOICES = ['task', 'queue', 'ids', 'all'] as const;
const ONE_OF = 'The body must name exactly one of `task`, `queue`, `ids` (job ids) or `all: true`.';

/** The filter of a retry body. @throws 400 with what is wrong with it */
function retryFilter(body: unknown): JobFilter {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad(`${ONE_OF} It is not a JSON object.`);
  const r = retryBody.safeParse(body);
  if (!r.success) {
    const issue = r.error.issues[0];
    const field = issue?.path[0];
    if (issue?.code === 'unrecognized_keys') throw bad(`${ONE_OF} Unknown field(s): ${issue.keys.join(', ')}.`);
    const what: Record<string, string> = {
      task: `\`task\` must be a task identifier (${NAME_TEXT})`,
      queue: `\`queue\` must be a queue name (${NAME_TEXT})`,
      ids: `\`ids\` must be an array of 1 to ${IDS_MAX} positive integer job ids`,
      all: '`all` must be `true`',
    };
    throw bad(typeof field === 'string' && what[field] ? `${what[field]}.` : ONE_OF);
  }
  const named = RETRY_CHOICES.filter((k) => r.data[k] !== undefined);
  if (named.length !== 1) throw bad(named.length ? `${ONE_OF} It names ${named.join(', ')}.` : ONE_OF);
  const { task, queue, ids } = r.data;
  return task ? { task } : queue ? { queue } : ids ? { ids: [...new Set(ids)] } : {};
}

/** `db`: the queue's database (graphile-worker's schema: `queue.dsn`, else the data database). */
export function jobRoutes(r: Registrar, o: { db: Executor }): void {
  r.get('/admin/jobs/failed', async function listFailedJobsHandler(ctx: Context) {
    const task = single(ctx, 'task', NAME, `a task identifier (${NAME_TEXT})`);
    const queue = single(ctx, 'queue', NAME, `a queue name (${NAME_TEXT})`);
    const limitText = single(ctx, 'limit', /^\d{1,4}$/, `an integer from 1 to ${LIST_MAX}`);
    const limit = limitText === undefined ? LIST_DEFAULT : Number(limitText);
    if (limit < 1 || limit > LIST_MAX) throw bad(`Parameter 'limit' must be an integer from 1 to ${LIST_MAX}.`);
    const filter: JobFilter = { ...(task ? { task } : {}), ...(queue ? { queue } : {}) };
    const [jobs, total] = await Promise.all([listFailedJobs(o.db, filter, limit), countFailedJobs(o.db, filter)]);
    ctx.set('X-Total-Count', String(total));
    ctx.body = jobs.map(renderFailedJob);
  });

  r.post('/admin/jobs/retry', async function retryFailedJobsHandler(ctx: Context) {
    const filter = retryFilter(ctx.request.body);
    const ids = await retryFailedJobs(o.db, filter);
    if (ids.length) ctx.state.log?.info({ jobs: ids }, 'admin API: failed jobs re-enqueued');
    ctx.body = { count: ids.length, ids };
  });
}
