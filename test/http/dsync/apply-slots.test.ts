/**
 * Directory writes of many directories at once take at most 4 pooled connections of the process
 * for their calls (src/dsync/change/apply.ts, MAX_CALLS): the rest of the pool stays free for
 * other statements (a webhook sender's reads, token requests), and the writes that wait go
 * together in fewer calls. Every write is still answered and stored once.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';
import { scimUser } from '../../helpers/webhooks.ts';

let s: TestServer;
let probe: pg.Client;

beforeAll(async () => {
  s = await startDsyncServer();
  probe = new pg.Client({ connectionString: s.database.url });
  await probe.connect();
});
afterAll(async () => {
  await probe?.end();
  await s?.close();
});

/** Calls of gatehouse_dsync_apply under way now (running or waiting for a lock). */
const callsUnderWay = async () => {
  const { rows } = await probe.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
     where datname = current_database() and pid <> pg_backend_pid() and state = 'active'
       and query like '%gatehouse_dsync_apply%'`,
  );
  return rows[0]?.n ?? 0;
};

describe('directory writes across directories', () => {
  it('take at most 4 connections for their calls, and every write is stored once', async () => {
    const dirs = await Promise.all(
      Array.from({ length: 12 }, (_, i) => createDirectory(s, { tenant: `slots-${i}`, product: 'p' })),
    );
    const PER_DIRECTORY = 30;
    const IN_FLIGHT = 4;
    let writing = true;
    const seen: number[] = [];
    const sampler = (async () => {
      const until = Date.now() + 60_000;
      while (writing && Date.now() < until) seen.push(await callsUnderWay());
    })();
    const statuses: number[] = [];
    try {
      await Promise.all(
        dirs.flatMap((d, k) =>
          Array.from({ length: IN_FLIGHT }, async (_, lane) => {
            const c = scimClient(s, d);
            for (let i = lane; i < PER_DIRECTORY; i += IN_FLIGHT)
              statuses.push((await c('POST', '/Users', scimUser(`slots-${k}-${i}`))).status);
          }),
        ),
      );
    } finally {
      writing = false;
      await sampler;
    }
    expect(statuses).toHaveLength(dirs.length * PER_DIRECTORY);
    expect(statuses.every((st) => st === 201)).toBe(true);
    // The sampler saw calls overlap, and never more than the process's slots.
    expect(Math.max(...seen)).toBeGreaterThanOrEqual(2);
    expect(Math.max(...seen)).toBeLessThanOrEqual(4);
    const { rows } = await probe.query<{ directory_id: string; n: number }>(
      'select directory_id, count(*)::int as n from dsync_users group by directory_id',
    );
    expect(rows.map((r) => r.n)).toEqual(dirs.map(() => PER_DIRECTORY));
  }, 90_000);
});
