/**
 * Crontab, hourly: deletes directory-sync events older than `dsync.events.retention` in bounded
 * batches (see src/dsync/events/feed.ts purge); when a run stops on its bound it enqueues itself
 * again. Webhook logs have their own purge (`dsync_webhook_logs_purge`).
 */
import { z } from 'zod';
import type { Container } from '../src/container.ts';
import { withTx } from '../src/core/db/tx.ts';
import { enqueue } from '../src/core/jobs/enqueue.ts';
import { defineTask } from '../src/core/jobs/task.ts';

export default defineTask(z.object({}).passthrough(), async (c: Container) => {
  const r = await c.dsync.services.feed.purge();
  if (r.deleted) c.log.info({ deleted: r.deleted, more: r.more }, 'directory-sync events purged');
  if (r.more) {
    await withTx(c.db, (trx) =>
      enqueue(trx, 'dsync_events_purge', {}, { maxAttempts: 3, jobKey: 'dsync:events-purge' }),
    );
  }
});
