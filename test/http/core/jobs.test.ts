import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseCrontab, type Runner } from 'graphile-worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { withTx } from '../../../src/core/db/tx.ts';
import { listFailedJobs } from '../../../src/core/jobs/admin.ts';
import { enqueue } from '../../../src/core/jobs/enqueue.ts';
import { defineTask } from '../../../src/core/jobs/task.ts';
import { eventually, startTestServer, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';

const jobCount = async (s: TestServer, task: string) =>
  (
    await sql<{ n: number }>`select count(*)::int as n from graphile_worker._private_jobs j
     join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = ${task}`.execute(s.container.db)
  ).rows[0]?.n ?? 0;

describe('jobs: enqueue in a transaction, retries, the failed state', () => {
  let s: TestServer;
  let runner: Runner;
  const seen: string[] = [];
  let failing = true;
  beforeAll(async () => {
    s = await startTestServer();
    const payload = z.object({ note: z.string() });
    runner = await s.startWorker({
      taskList: {
        test_record: defineTask(payload, async (_ctx, p) => {
          seen.push(p.note);
        }).bindTo(s.container),
        test_flaky: defineTask(payload, async () => {
          if (failing) throw new Error('receiver unavailable');
          seen.push('flaky-ok');
        }).bindTo(s.container),
      },
    });
  });
  afterAll(async () => {
    await runner?.stop();
    await s?.close();
  });

  it('runs a job enqueued in a committed transaction', async () => {
    await withTx(s.container.db, (trx) => enqueue(trx, 'test_record', { note: 'committed' }, { maxAttempts: 3 }));
    await eventually(async () => seen.includes('committed'));
  });

  it('never creates a job whose transaction rolled back', async () => {
    await expect(
      withTx(s.container.db, async (trx) => {
        await enqueue(trx, 'test_record', { note: 'rolled-back' }, { maxAttempts: 3 });
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    await withTx(s.container.db, (trx) => enqueue(trx, 'test_record', { note: 'marker' }, { maxAttempts: 3 }));
    // Every job of the task has run and been deleted (a job's row goes only after its function has
    // returned: `seen` alone can hold 'marker' while the marker's row is still there). Had the
    // rolled-back job been created, it would have run by then too.
    await eventually(async () => seen.includes('marker') && (await jobCount(s, 'test_record')) === 0);
    expect(seen).not.toContain('rolled-back');
  });

  it('retries a failing job with backoff, leaves it failed after max attempts, and `jobs retry` re-enqueues it', async () => {
    const id = await withTx(s.container.db, (trx) => enqueue(trx, 'test_flaky', { note: 'x' }, { maxAttempts: 2 }));
    const dead = await eventually(
      async () => (await listFailedJobs(s.container.db, { task: 'test_flaky' })).find((j) => j.id === id),
      15_000,
    );
    expect(dead.attempts).toBe(2);
    expect(dead.lastError).toMatch(/receiver unavailable/);
    // Plain SQL shows the same (README: inspecting jobs).
    const { rows } = await sql<{
      id: number;
    }>`select id from graphile_worker.jobs where task_identifier = 'test_flaky' and attempts >= max_attempts`.execute(
      s.container.db,
    );
    expect(rows.map((r) => Number(r.id))).toContain(id);

    const env = { DSN: s.database.url, SECRETS_SYSTEM: TEST_SECRET };
    const listed = await runCli(['jobs', 'failed', '--task', 'test_flaky', '--json'], env);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).map((j: { id: number }) => j.id)).toEqual([id]);

    failing = false;
    const retried = await runCli(['jobs', 'retry', '--task', 'test_flaky'], env);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toContain(`re-enqueued 1 job(s): ${id}`);
    await eventually(async () => seen.includes('flaky-ok'));
    await eventually(async () => (await jobCount(s, 'test_flaky')) === 0);
    const none = await runCli(['jobs', 'failed'], env);
    expect(none.stdout).toContain('no failed jobs');
  });
});

describe('tasks/ and crontab', () => {
  it('every crontab identifier has a task file and every task file default-exports a task', async () => {
    const root = resolve(import.meta.dirname, '../../..');
    const items = parseCrontab(readFileSync(resolve(root, 'crontab'), 'utf8'));
    const files = readdirSync(resolve(root, 'tasks')).filter((f) => f.endsWith('.ts'));
    const names = files.map((f) => f.replace(/\.ts$/, ''));
    for (const i of items) expect(names).toContain(i.task);
    for (const f of files) {
      const mod = await import(resolve(root, 'tasks', f));
      expect(typeof mod.default?.bindTo).toBe('function');
    }
  });
});
