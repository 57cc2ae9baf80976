/**
 * Crontab, hourly: deletes audit events older than `audit.retention` (0: kept forever),
 * `audit.purge_batch_size` rows per transaction and at most 100 batches per run; when a run stops on
 * that bound it enqueues itself again.
 */
import { z } from 'zod';
import type { Container } from '../src/container.ts';
import { purgeAuditEvents } from '../src/core/audit/store.ts';
import { enqueue } from '../src/core/jobs/enqueue.ts';
import { defineTask } from '../src/core/jobs/task.ts';

export default defineTask(z.object({}).passthrough(), async (c: Container) => {
  const { retention, purge_batch_size: batchSize } = c.config.audit;
  if (retention <= 0) return;
  const r = await purgeAuditEvents(c.db, {
    olderThan: new Date(c.clock.now().getTime() - retention),
    batchSize,
    limit: batchSize * 100,
  });
  if (r.deleted) c.log.info({ deleted: r.deleted, more: r.more }, 'audit events purged');
  if (r.more) await enqueue(c.db, 'audit_purge', {}, { maxAttempts: 3, jobKey: 'audit:purge' });
});
