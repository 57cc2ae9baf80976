/**
 * Webhook logs (Jackson `webhookLogs`, exposed as `/api/v1/dsync/events`, spec/dsync.md §1.7, §4.6).
 * Logs are written by webhook delivery, which is issue #7; until it lands no log exists, so the
 * reads answer with Jackson's empty shapes after checking their scope.
 */
import type { DirectoriesService } from '../directories/service.ts';
import type { PageParams, ScopeQuery } from '../types.ts';

export function createWebhookLogsService(o: { directories: DirectoriesService }) {
  // TODO(#7): read dsync webhook logs once delivery writes them.
  async function list(q: ScopeQuery, _p: PageParams = {}): Promise<unknown[]> {
    await o.directories.resolveScope(q);
    return [];
  }

  async function get(q: ScopeQuery, _id: unknown): Promise<null> {
    await o.directories.resolveScope(q);
    return null;
  }

  /** Jackson `deleteAll(directoryId)`; the directory must exist (404 otherwise). */
  async function deleteAll(directoryId: unknown): Promise<void> {
    await o.directories.get(directoryId);
  }

  return { list, get, deleteAll };
}

export type WebhookLogsService = ReturnType<typeof createWebhookLogsService>;
