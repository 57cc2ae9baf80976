/**
 * Crontab, hourly: deletes webhook logs older than `dsync.webhook_logs_ttl` in bounded batches;
 * when a run stops on its bound it enqueues itself again.
 */
import { z } from 'zod';
import type { Container } from '../src/container.ts';
import { withTx } from '../src/core/db/tx.ts';
import { enqueue } from '../src/core/jobs/enqueue.ts';
import { defineTask } from '../src/core/jobs/task.ts';

export default defineTask(z.object({}).passthrough(), async (c: Container) => {
  const r = await c.dsync.services.webhookLogs.purge();
  if (r.deleted) c.log.info({ deleted: r.deleted, more: r.more }, 'webhook logs purged');
  if (r.more) {
    await withTx(c.db, (trx) =>
      enqueue(trx, 'dsync_webhook_logs_purge', {}, { maxAttempts: 3, jobKey: 'dsync:webhook-logs-purge' }),
    );
  }
});
