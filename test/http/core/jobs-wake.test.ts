/**
 * Jobs added together all start at once. Workers woken together by the NOTIFYs of several job
 * inserts fetch together, and graphile-worker's fetch locks the named-queue rows it looks at (FOR
 * UPDATE SKIP LOCKED), so some of them come back empty while jobs wait; without a further wake they
 * idle until the poll interval (here a minute). The runner (src/core/jobs/runner.ts) wakes one more
 * idle worker after each job that starts while a slot is left.
 */
import type { Runner } from 'graphile-worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { withTx } from '../../../src/core/db/tx.ts';
import { enqueue } from '../../../src/core/jobs/enqueue.ts';
import { startWorker } from '../../../src/core/jobs/runner.ts';
import { defineTask } from '../../../src/core/jobs/task.ts';
import { eventually, startTestServer, type TestServer } from '../../helpers/apps.ts';

const JOBS = 8;

describe('jobs added together', () => {
  let s: TestServer;
  let runner: Runner | undefined;
  const started = new Set<string>();
  /** The held jobs wait for `gate.wait`; `gate.open()` lets them end and holds the next ones. */
  const gate = { wait: Promise.resolve(), open: () => {} };
  const close = () => {
    gate.wait = new Promise<void>((r) => {
      gate.open = r;
    });
  };
  close();
  beforeAll(async () => {
    s = await startTestServer();
    runner = await startWorker({
      pool: s.container.pool,
      log: s.container.log,
      concurrency: JOBS,
      // Only the NOTIFYs and the runner's own wakes can start the jobs within the test.
      pollInterval: 60_000,
      crontab: '',
      livenessIntervalMs: 60_000,
      taskList: {
        test_hold: defineTask(z.object({ n: z.string() }), async (_c, p) => {
          started.add(p.n);
          await gate.wait;
        }).bindTo(s.container),
      },
    });
  });
  afterAll(async () => {
    gate.open();
    await runner?.stop();
    await s?.close();
  });

  it('start within seconds, not at the next poll, each in a named queue of its own (as webhook senders)', async () => {
    // Let every worker make its first (empty) fetch and go idle.
    await new Promise((r) => setTimeout(r, 300));
    for (let round = 0; round < 3; round++) {
      await withTx(s.container.db, async (trx) => {
        for (let i = 0; i < JOBS; i++)
          await enqueue(trx, 'test_hold', { n: `${round}-${i}` }, { maxAttempts: 1, queueName: `q-${round}-${i}` });
      });
      const ok = await eventually(async () => started.size === (round + 1) * JOBS || undefined, 5_000).catch(
        () => false,
      );
      expect({ round, started: started.size, ok }).toEqual({ round, started: (round + 1) * JOBS, ok: true });
      if (round < 2) {
        // Free the slots for the next round: the held jobs end together.
        const open = gate.open;
        close();
        open();
        await eventually(async () => {
          const { rows } = await sql<{ n: number }>`select count(*)::int as n from graphile_worker.jobs
            where task_identifier = 'test_hold'`.execute(s.container.db);
          return rows[0]?.n === 0;
        });
      }
    }
  });
});
