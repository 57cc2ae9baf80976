/** Helpers for webhook delivery tests: job and outbox state in SQL, and shortening backoff. */
import { sql } from 'kysely';
import type { WebhookEvent } from '../../src/dsync/types.ts';
import type { TestServer } from './apps.ts';
import type { Receiver } from './receiver.ts';

/** Makes every waiting job (and batch backoff) due now: graphile backoff without waiting for it. */
export async function nudge(s: TestServer): Promise<void> {
  await sql`update graphile_worker._private_jobs set run_at = now()
            where locked_at is null and run_at > now() and attempts < max_attempts`.execute(s.container.db);
  await sql`update dsync_webhook_backoff set next_attempt_at = now() where next_attempt_at > now()`.execute(
    s.container.db,
  );
}

export async function outboxCount(s: TestServer, directoryId?: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from dsync_webhook_outbox
    where ${directoryId ? sql`directory_id = ${directoryId}` : sql`true`}`.execute(s.container.db);
  return rows[0]?.n ?? 0;
}

export interface JobRow {
  id: number;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  queue_name: string | null;
  locked_at: Date | null;
}

/** Jobs of a task as the README's SQL shows them (the `graphile_worker.jobs` view). */
export async function jobsOf(s: TestServer, task: string): Promise<JobRow[]> {
  const { rows } = await sql<JobRow>`
    select id, attempts, max_attempts, last_error, queue_name, locked_at from graphile_worker.jobs
    where task_identifier = ${task} order by id`.execute(s.container.db);
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

/** Jobs out of attempts and not running (a running job's attempts already count the current one). */
export async function deadJobs(s: TestServer, task: string): Promise<JobRow[]> {
  return (await jobsOf(s, task)).filter((j) => j.attempts >= j.max_attempts && j.locked_at === null);
}

/** A SCIM user body. */
export const scimUser = (n: number | string, extra: Record<string, unknown> = {}) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: `user${n}@example.com`,
  name: { givenName: `Given${n}`, familyName: `Family${n}` },
  emails: [{ value: `user${n}@example.com`, primary: true, type: 'work' }],
  active: true,
  ...extra,
});

/** The events a receiver acknowledged (2xx) for one directory, in the order they came. */
export const deliveredEvents = (rx: Receiver, directoryId: string): WebhookEvent[] =>
  rx
    .delivered()
    .map((r) => r.body as WebhookEvent)
    .filter((e) => e.directory_id === directoryId);
