/**
 * Connection lifecycle events: `dsync.created`, `dsync.deleted`,
 * `dsync.activated`, `dsync.deactivated`, POSTed to the global webhook `dsync.webhook_url`
 * (Jackson's `WEBHOOK_URL`) signed with `dsync.webhook_secret` (`WEBHOOK_SECRET`), when both are
 * set. Body: Jackson's `{event, tenant, product, data: {id, name, type}}`, then `id` and
 * `created_at`. Each is a `dsync_lifecycle_webhook` job enqueued in the transaction of the change
 * (queue `dsync:lifecycle`, so they go out in order), retried with backoff up to
 * `dsync.webhook.max_attempts`. Not affected by batch mode or `log_webhook_events` (as Jackson).
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../core/clock.ts';
import type { SafeFetch } from '../../core/safe-fetch.ts';
import type { Executor } from '../tables.ts';
import type { DsyncJobs } from '../tasks.ts';
import { DeliveryFailed, postWebhook } from './webhook.ts';

export const LIFECYCLE_TASK = 'dsync_lifecycle_webhook' as const;
export const LIFECYCLE_QUEUE = 'dsync:lifecycle';

export type LifecycleType = 'dsync.created' | 'dsync.deleted' | 'dsync.activated' | 'dsync.deactivated';

export interface LifecycleEvent {
  event: LifecycleType;
  tenant: string;
  product: string;
  data: { id: string; name: string; type: string };
  id: string;
  created_at: string;
}

export function createLifecycleService(o: {
  clock: Clock;
  fetch: SafeFetch;
  endpoint: string;
  secret: string;
  maxAttempts: number;
  jobs: DsyncJobs;
}) {
  const enabled = o.endpoint !== '' && o.secret !== '';

  /** Queues the event in the caller's transaction (nothing when the global webhook is not set). */
  async function emit(
    trx: Executor,
    type: LifecycleType,
    d: { id: string; name: string; tenant: string; product: string; type: string },
  ): Promise<void> {
    if (!enabled) return;
    const event: LifecycleEvent = {
      event: type,
      tenant: d.tenant,
      product: d.product,
      data: { id: d.id, name: d.name, type: d.type },
      id: randomUUID(),
      created_at: o.clock.now().toISOString(),
    };
    await o.jobs.add(
      trx,
      LIFECYCLE_TASK,
      { event: { ...event } },
      { queueName: LIFECYCLE_QUEUE, maxAttempts: o.maxAttempts },
    );
  }

  /** One attempt (the job's body); throws when not delivered, so graphile-worker retries. */
  async function deliver(event: Record<string, unknown>): Promise<void> {
    if (!enabled) return; // configuration removed since: nowhere to send it
    const a = await postWebhook(o.fetch, o.clock, { endpoint: o.endpoint, secret: o.secret }, JSON.stringify(event));
    if (!a.delivered) throw new DeliveryFailed(`lifecycle webhook ${String(event.event)} failed: ${a.error}`);
  }

  return { enabled, emit, deliver };
}
