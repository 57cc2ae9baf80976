/**
 * Failed-authentication counts kept in memory between changes: a process that has read a count
 * does not read it again while nothing was written to `auth_failures`; a failure counted in the same
 * process is seen at once, one counted in another process as soon as its notification arrives.
 */

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { basicToken, type FailedAuthPair, failedAuthPair } from '../../helpers/failed-auth.ts';
import type { CreatedClient } from '../../helpers/oauth2.ts';

/** The stored key of a client id (auth-failures.ts: SHA-256 of kind and value). */
const credentialKey = (id: string) => createHash('sha256').update(`credential\0${id}`).digest('base64url').slice(0, 32);

describe('failed-authentication counts kept in memory, across processes', () => {
  let pair: FailedAuthPair;
  let clock: FailedAuthPair['clock'];
  let s: TestServer;
  let other: TestServer;
  let a: CreatedClient;
  let b: CreatedClient;
  beforeAll(async () => {
    pair = await failedAuthPair();
    ({ clock, s, other, a, b } = pair);
    await eventually(async () => s.container.changes.live() && other.container.changes.live());
  });
  afterAll(() => pair?.close());

  const trigger = (on: boolean) =>
    s.container.pool.query(
      `alter table auth_failures ${on ? 'enable' : 'disable'} trigger auth_failures_notify_change`,
    );

  it('answers from memory while nothing was written, and reads again after a notified write', async () => {
    expect((await basicToken(other, a.client_id, a.client_secret ?? '')).status).toBe(200); // count 0 now kept
    await trigger(false);
    try {
      // Written behind the memory's back (no notification): still the count read before.
      await s.container.pool.query(
        `insert into auth_failures (key, window_start, failures) values ($1, '2030-01-01T00:00:00Z', 3)`,
        [credentialKey(a.client_id)],
      );
      expect((await basicToken(other, a.client_id, a.client_secret ?? '')).status).toBe(200);
    } finally {
      await trigger(true);
    }
    // Any notified write to the table (here: another client's failure in the other process) makes it read again.
    expect((await basicToken(s, b.client_id, 'wrong-secret')).status).toBe(401);
    await eventually(async () => (await basicToken(other, a.client_id, a.client_secret ?? '')).status === 429, 5_000);
  });

  it('refuses at once, in the same process, after the limit is reached there', async () => {
    expect((await basicToken(other, b.client_id, b.client_secret ?? '')).status).toBe(200); // kept: 1 failure
    expect((await basicToken(other, b.client_id, 'wrong-secret')).status).toBe(401);
    expect((await basicToken(other, b.client_id, 'wrong-secret')).status).toBe(401);
    expect((await basicToken(other, b.client_id, b.client_secret ?? '')).status).toBe(429);
    // And in the first process once notified.
    await eventually(async () => (await basicToken(s, b.client_id, b.client_secret ?? '')).status === 429, 5_000);
    clock.advance(60_000);
    expect((await basicToken(s, b.client_id, b.client_secret ?? '')).status).toBe(200);
    expect((await basicToken(other, b.client_id, b.client_secret ?? '')).status).toBe(200);
  });
});
