/**
 * The directory-sync tasks and their payloads (task name → zod schema). The composition root adds
 * them to the registry (src/task-registry.ts); the domain's services submit jobs through
 * `Jobs<DsyncTasks>`, so a wrong task name or payload is a type error where the job is enqueued.
 * What a task file receives is declared apart (src/dsync/task-context.ts), so that this registry,
 * which the services import, never reaches back to the domain's face.
 */
import { z } from 'zod';
import type { Jobs } from '../core/jobs/registry.ts';
import { taskRegistry } from '../core/jobs/registry.ts';
import { cloudSyncPayload, cloudSyncSweepPayload } from './cloud/google/schemas.ts';

const none = z.object({}).passthrough();

export const dsyncTasks = taskRegistry({
  /**
   * A directory's real-time sender (events/delivery.ts). `senderId` names the sender (its job key is
   * `dsync:sender:<senderId>`); jobs of earlier releases carry none, or an `eventId`.
   */
  webhook_deliver: z.object({
    directoryId: z.string().uuid(),
    senderId: z.string().uuid().optional(),
    eventId: z.string().uuid().optional(),
  }),
  dsync_cloud_sync: cloudSyncPayload,
  dsync_cloud_sync_sweep: cloudSyncSweepPayload,
  dsync_events_purge: none,
  dsync_lifecycle_webhook: z.object({ event: z.record(z.string(), z.unknown()) }),
  dsync_process_events: z.object({ trigger: z.string().optional() }).passthrough(),
  dsync_webhook_logs_purge: none,
  dsync_webhook_maintenance: none,
});

export type DsyncTasks = typeof dsyncTasks;
export type DsyncJobs = Jobs<DsyncTasks>;
