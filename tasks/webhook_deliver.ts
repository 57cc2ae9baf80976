/** Real-time webhook delivery of directory-sync events: a directory's sender (src/dsync/events/delivery.ts). */
import { taskFrom } from '../src/core/jobs/registry.ts';
import { jobSlots } from '../src/core/jobs/slots.ts';
import { metrics } from '../src/core/observability/metrics.ts';
import { DELIVER_TASK } from '../src/dsync/events/service.ts';
import type { DsyncTaskContext } from '../src/dsync/task-context.ts';
import { dsyncTasks } from '../src/dsync/tasks.ts';

export default taskFrom(
  dsyncTasks,
  DELIVER_TASK,
  async (c: Pick<DsyncTaskContext, 'dsync' | 'db' | 'audit'>, p, helpers) => {
    const { attempts, max_attempts: max } = helpers.job;
    if (attempts > 1) metrics.webhookRetries.inc();
    const job = { id: Number(helpers.job.id), attempt: attempts };
    try {
      // Lingers, and keeps its slot past its turn, only while another slot of this worker that runs
      // senders is idle (src/core/jobs/slots.ts): senders run in a lane of their own by default.
      await c.dsync.services.delivery.deliver(p, job, {
        idleSlot: () => jobSlots.free(DELIVER_TASK) > 0,
        nudge: () => jobSlots.nudge(DELIVER_TASK),
        signal: helpers.abortSignal,
      });
    } catch (e) {
      if (attempts >= max) {
        metrics.webhookFailedPermanently.inc();
        await c.dsync.services.delivery.senderFailed(p, job).catch(() => {});
        await c.audit
          .record(c.db, {
            type: 'dsync.webhook.failed_permanently',
            actor: { kind: 'system' },
            target: { kind: 'directory', id: p.directoryId },
            outcome: 'failure',
            details: { job: String(helpers.job.id), attempts, event: p.eventId },
          })
          .catch(() => {});
      }
      throw e;
    }
  },
);
