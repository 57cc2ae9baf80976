/**
 * One registry of tasks (name → payload schema) shared by the enqueuing side (`Jobs`) and the task
 * files (`taskFrom`). The type checks at the bottom are compiled by `npm run typecheck`: each
 * `@ts-expect-error` fails the type check if the line it marks stops being an error.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Container } from '../../../src/container.ts';
import type { Executor } from '../../../src/core/db/tx.ts';
import { type Jobs, taskFrom } from '../../../src/core/jobs/registry.ts';
import { loadTaskList, TASKS_DIR } from '../../../src/core/jobs/runner.ts';
import type { BoundTask } from '../../../src/core/jobs/task.ts';
import { dsyncTasks } from '../../../src/dsync/tasks.ts';
import { type Tasks, taskRegistry } from '../../../src/task-registry.ts';

describe('task registry', () => {
  it('has a task file for every entry and an entry for every task file, each named after its task', async () => {
    const files = readdirSync(TASKS_DIR)
      .filter((f) => /^[a-z0-9_]+\.ts$/.test(f))
      .map((f) => f.replace(/\.ts$/, ''))
      .sort();
    expect(files).toEqual(Object.keys(taskRegistry).sort());
    for (const name of files) {
      const mod = (await import(pathToFileURL(join(TASKS_DIR, `${name}.ts`)).href)) as { default: BoundTask<unknown> };
      expect(mod.default.taskName).toBe(name);
    }
  });

  it('refuses a task file named otherwise than its task', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-tasks-'));
    try {
      const registry = pathToFileURL(resolve(import.meta.dirname, '../../../src/core/jobs/registry.ts')).href;
      const schemas = pathToFileURL(resolve(import.meta.dirname, '../../../src/dsync/tasks.ts')).href;
      writeFileSync(
        join(dir, 'dsync_events_purg.ts'),
        `import { taskFrom } from '${registry}';\nimport { dsyncTasks } from '${schemas}';\nexport default taskFrom(dsyncTasks, 'dsync_events_purge', async () => {});\n`,
      );
      await expect(loadTaskList({}, dir)).rejects.toThrow(
        'tasks/dsync_events_purg.ts defines the task dsync_events_purge: the file must be named after its task',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to define a task that is not registered', () => {
    // @ts-expect-error: not a task of the registry
    expect(() => taskFrom(dsyncTasks, 'webhook_delivr', async () => {})).toThrow(
      'task webhook_delivr is not in the task registry',
    );
  });
});

/** Never called: compiled only, so that a wrong task name or payload at an enqueue site is a type error. */
async function typeChecks(jobs: Jobs<Tasks>, exec: Executor): Promise<void> {
  const spec = { maxAttempts: 1 };
  await jobs.add(exec, 'webhook_deliver', { directoryId: '00000000-0000-4000-8000-000000000000' }, spec);
  await jobs.add(exec, 'oauth2_backchannel_logout', { sid: 's', clientId: 'c' }, spec);
  // @ts-expect-error: a typo in the task name
  await jobs.add(exec, 'webhook_delivr', { directoryId: 'x' }, spec);
  // @ts-expect-error: the payload of another task
  await jobs.add(exec, 'webhook_deliver', { sid: 's', clientId: 'c' }, spec);
  // @ts-expect-error: a field of the wrong type
  await jobs.add(exec, 'oauth2_backchannel_logout', { sid: 1, clientId: 'c' }, spec);
  // @ts-expect-error: a janitor target that does not exist
  await jobs.add(exec, 'oauth2_janitor', { targets: ['tokenz'] }, spec);
  // @ts-expect-error: addMany checks each payload too
  await jobs.addMany(exec, 'oauth2_backchannel_logout', [{ sid: 's' }], spec);
  taskFrom(dsyncTasks, 'dsync_cloud_sync', async (_c: unknown, p) => {
    const id: string = p.directoryId;
    // @ts-expect-error: the handler's payload is the task's parsed payload
    const n: number = p.directoryId;
    void id;
    void n;
  });
}
void typeChecks;

/** The context a task file's handler asks for. */
type ContextOf<M> = M extends { default: BoundTask<infer C> } ? C : never;
/** The task files' modules, by task name (type queries only: nothing is loaded). */
interface TaskModules {
  audit_purge: typeof import('../../../tasks/audit_purge.ts');
  dsync_cloud_sync: typeof import('../../../tasks/dsync_cloud_sync.ts');
  dsync_cloud_sync_sweep: typeof import('../../../tasks/dsync_cloud_sync_sweep.ts');
  dsync_events_purge: typeof import('../../../tasks/dsync_events_purge.ts');
  dsync_lifecycle_webhook: typeof import('../../../tasks/dsync_lifecycle_webhook.ts');
  dsync_process_events: typeof import('../../../tasks/dsync_process_events.ts');
  dsync_webhook_logs_purge: typeof import('../../../tasks/dsync_webhook_logs_purge.ts');
  dsync_webhook_maintenance: typeof import('../../../tasks/dsync_webhook_maintenance.ts');
  oauth2_backchannel_logout: typeof import('../../../tasks/oauth2_backchannel_logout.ts');
  oauth2_janitor: typeof import('../../../tasks/oauth2_janitor.ts');
  webhook_deliver: typeof import('../../../tasks/webhook_deliver.ts');
}

/**
 * Never called: the worker binds every task file to the container (loaded by name at run time), so
 * the container must satisfy each task's own, narrower context.
 */
function containerFitsEveryTask(c: Container): void {
  const contexts: { [N in keyof Tasks & string]: ContextOf<TaskModules[N]> } = {
    audit_purge: c,
    dsync_cloud_sync: c,
    dsync_cloud_sync_sweep: c,
    dsync_events_purge: c,
    dsync_lifecycle_webhook: c,
    dsync_process_events: c,
    dsync_webhook_logs_purge: c,
    dsync_webhook_maintenance: c,
    oauth2_backchannel_logout: c,
    oauth2_janitor: c,
    webhook_deliver: c,
  };
  // @ts-expect-error: the janitor needs the OAuth 2.0 domain, which directory sync alone lacks
  const janitor: ContextOf<TaskModules['oauth2_janitor']> = { dsync: c.dsync };
  void contexts;
  void janitor;
}
void containerFitsEveryTask;
