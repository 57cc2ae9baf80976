/**
 * Crontab, hourly: deletes audit events older than `audit.retention` (0: kept forever),
 * `audit.purge_batch_size` rows per transaction and at most 100 batches per run; when a run stops on
 * that bound it enqueues itself again.
 */
import { purgeAuditEvents } from '../src/core/audit/store.ts';
import { type CoreTaskContext, coreTasks } from '../src/core/audit/tasks.ts';
import { taskFrom } from '../src/core/jobs/registry.ts';

export default taskFrom(coreTasks, 'audit_purge', async (c: CoreTaskContext) => {
  const { retention, purge_batch_size: batchSize } = c.config.audit;
  if (retention <= 0) return;
  const r = await purgeAuditEvents(c.db, {
    olderThan: new Date(c.clock.now().getTime() - retention),
    batchSize,
    limit: batchSize * 100,
  });
  if (r.deleted) c.log.info({ deleted: r.deleted, more: r.more }, 'audit events purged');
  if (r.more) await c.jobs.add(c.db, 'audit_purge', {}, { maxAttempts: 3, jobKey: 'audit:purge' });
});
