/**
 * Hot-path mechanisms of the token endpoint and introspection, through the HTTP API of two
 * processes on one database: access-token rows written together by concurrent requests (each
 * answered only once its own row is committed), alone or with the jti of their DPoP proof (a row
 * only for a jti recorded by the same statement), and introspected access tokens kept briefly in
 * memory — dropped at once when a token is revoked, in the same process or in another (the
 * trigger's `token` notification), and never kept beyond INTROSPECTION_CACHE_TTL_MS; clients
 * kept in memory, dropped at once by a change made through the same process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  insertAccessTokenGrouped,
  insertAccessTokenWithJtiGrouped,
  insertJtiGrouped,
} from '../../../src/oauth2/store/token-batch.ts';
import { insertAccessTokensWithJtis } from '../../../src/oauth2/store/tokens.ts';
import { INTROSPECTION_CACHE_TTL_MS } from '../../../src/oauth2/token/lookup.ts';
import { eventually, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { type CreatedClient, createClient } from '../../helpers/oauth2.ts';
import { introspect, revoke, tokenRequest } from '../../helpers/tokens.ts';

let database: TestDatabase;
let a: TestServer;
let b: TestServer;
let machine: CreatedClient;

beforeAll(async () => {
  database = await createTestDatabase();
  a = await startTestServer({ database });
  b = await startTestServer({ database });
  machine = await createClient(a, { grant_types: ['client_credentials'], scope: 'read write', response_types: [] });
  // Both processes listen for changes (the feed starts on first use).
  await eventually(async () => a.container.changes.live() && b.container.changes.live());
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await database?.drop();
});

async function machineToken(t: TestServer): Promise<string> {
  const r = await tokenRequest(t, machine, { grant_type: 'client_credentials', scope: 'read' });
  expect(r.status).toBe(200);
  return r.body.access_token as string;
}

const active = async (t: TestServer, token: string) => (await introspect(t, token)).body.active === true;

async function withoutNotification<T>(fn: () => Promise<T>): Promise<T> {
  const q = (on: boolean) =>
    a.container.pool.query(
      `alter table oauth2_access_tokens ${on ? 'enable' : 'disable'} trigger oauth2_access_tokens_notify_delete`,
    );
  await q(false);
  try {
    return await fn();
  } finally {
    await q(true);
  }
}

describe('concurrent token requests (rows written together)', () => {
  it('answers every request with its own token, each active at once in another process', async () => {
    const replies = await Promise.all(
      Array.from({ length: 40 }, () => tokenRequest(a, machine, { grant_type: 'client_credentials', scope: 'read' })),
    );
    expect(replies.map((r) => r.status)).toEqual(replies.map(() => 200));
    const tokens = replies.map((r) => r.body.access_token as string);
    expect(new Set(tokens).size).toBe(40);
    // Answered only after its row committed: no eventually here.
    const seen = await Promise.all(tokens.map((t) => introspect(b, t)));
    for (const s of seen) expect(s.body).toMatchObject({ active: true, client_id: machine.client_id, scope: 'read' });
  });

  it('fails only the request whose row cannot be written when rows of one statement are grouped', async () => {
    const now = new Date();
    const row = (signature: string) => ({
      signature,
      requestId: `req-${signature}`,
      clientId: machine.client_id,
      subject: machine.client_id,
      requestedScope: [],
      grantedScope: [],
      requestedAudience: [],
      grantedAudience: [],
      requestedAt: now,
      expiresAt: new Date(now.getTime() + 60_000),
      sessionData: '{}',
    });
    const db = a.container.db;
    await insertAccessTokenGrouped(db, row('dup-sig'));
    // More rows than writes run at once: later ones are grouped with the duplicate.
    const sigs = Array.from({ length: 30 }, (_, i) => (i === 17 ? 'dup-sig' : `grouped-${i}`));
    const results = await Promise.allSettled(sigs.map((s) => insertAccessTokenGrouped(db, row(s))));
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect(results[17]?.status).toBe('rejected');
    const { rows } = await a.container.pool.query(
      "select count(*)::int as n from oauth2_access_tokens where signature like 'grouped-%'",
    );
    expect(rows[0].n).toBe(29);
  });
});

describe('jtis recorded together (DPoP proofs, client assertions)', () => {
  it('accepts each jti once, also when copies arrive in one statement, and takes over only expired entries', async () => {
    const db = a.container.db;
    const now = new Date();
    const later = new Date(now.getTime() + 60_000);
    await insertJtiGrouped(db, 'jti-known', later, now);
    await insertJtiGrouped(db, 'jti-expired', new Date(now.getTime() - 1_000), new Date(now.getTime() - 2_000));
    // More jtis than writes run at once: later ones share statements, copies among them.
    const sigs = Array.from({ length: 30 }, (_, i) =>
      i === 3 ? 'jti-known' : i === 5 ? 'jti-expired' : i === 11 || i === 23 ? 'jti-twice' : `jti-${i}`,
    );
    const results = await Promise.all(sigs.map((s) => insertJtiGrouped(db, s, later, now)));
    const accepted = sigs.filter((_, i) => results[i]);
    expect(accepted).not.toContain('jti-known');
    expect(accepted).toContain('jti-expired');
    expect(accepted.filter((s) => s === 'jti-twice')).toHaveLength(1);
    expect(accepted).toHaveLength(28);
    const { rows } = await a.container.pool.query(
      "select count(*)::int as n from oauth2_jti_blacklist where signature like 'jti-%' and expires_at > now()",
    );
    expect(rows[0].n).toBe(29);
  });
});

describe('access-token rows written with the jti of their DPoP proof', () => {
  const now = new Date();
  const later = new Date(now.getTime() + 60_000);
  const token = (signature: string) => ({
    signature,
    requestId: `req-${signature}`,
    clientId: machine.client_id,
    subject: machine.client_id,
    requestedScope: ['read'],
    grantedScope: ['read'],
    requestedAudience: [],
    grantedAudience: ['https://api.example/"quoted"'],
    requestedAt: now,
    expiresAt: later,
    sessionData: 'sealed,{"x":"\\"}',
  });
  const jti = (signature: string, expiresAt = later) => ({ signature, expiresAt, now });
  const stored = async (like: string) =>
    (
      await a.container.pool.query<{ signature: string }>(
        'select signature from oauth2_access_tokens where signature like $1 order by signature',
        [like],
      )
    ).rows.map((r) => r.signature);

  it('in one statement: a replayed jti beside a fresh one stores only the fresh one', async () => {
    const db = a.container.db;
    await insertJtiGrouped(db, 'pair-known', later, now);
    await insertJtiGrouped(db, 'pair-expired', new Date(now.getTime() - 1_000), new Date(now.getTime() - 2_000));
    const results = await insertAccessTokensWithJtis(db, [
      { token: token('pair-t1'), jti: jti('pair-fresh') },
      { token: token('pair-t2'), jti: jti('pair-fresh') },
      { token: token('pair-t3'), jti: jti('pair-known') },
      { token: token('pair-t4'), jti: jti('pair-expired') },
    ]);
    expect(results).toEqual([true, false, false, true]);
    expect(await stored('pair-t%')).toEqual(['pair-t1', 'pair-t4']);
    const { rows } = await a.container.pool.query(
      'select requested_scope, granted_audience, session_data from oauth2_access_tokens where signature = $1',
      ['pair-t1'],
    );
    expect(rows[0]).toEqual({
      requested_scope: ['read'],
      granted_audience: ['https://api.example/"quoted"'],
      session_data: 'sealed,{"x":"\\"}',
    });
  });

  it('grouped with concurrent ones: each jti stores one row, copies and known jtis none', async () => {
    const db = a.container.db;
    await insertJtiGrouped(db, 'group-known', later, now);
    // More rows than writes run at once: later ones share statements, copies among them.
    const jtis = Array.from({ length: 30 }, (_, i) =>
      i === 4 ? 'group-known' : i === 9 || i === 21 || i === 22 ? 'group-thrice' : `group-${i}`,
    );
    const results = await Promise.all(
      jtis.map((j, i) => insertAccessTokenWithJtiGrouped(db, token(`group-t${i}`), jti(j))),
    );
    expect(results.filter((r, i) => r && jtis[i] === 'group-thrice')).toHaveLength(1);
    expect(results[4]).toBe(false);
    expect(results.filter(Boolean)).toHaveLength(27);
    const rows = await stored('group-t%');
    expect(rows.sort()).toEqual(results.flatMap((r, i) => (r ? [`group-t${i}`] : [])).sort());
  });
});

describe('introspected access tokens kept in memory', () => {
  it('answers from memory while nothing was deleted, and never longer than the bound', async () => {
    const token = await machineToken(a);
    expect(await active(b, token)).toBe(true); // now kept by b
    await withoutNotification(async () => {
      // Deleted behind the cache's back (no notification, another connection): b still answers from memory…
      await a.container.pool.query('delete from oauth2_access_tokens where client_id = $1', [machine.client_id]);
      expect(await active(b, token)).toBe(true);
      // …but not beyond the bound.
      const started = Date.now();
      await eventually(async () => !(await active(b, token)), INTROSPECTION_CACHE_TTL_MS + 5_000);
      expect(Date.now() - started).toBeLessThanOrEqual(INTROSPECTION_CACHE_TTL_MS + 5_000);
    });
  });

  it('makes a token revoked in another process inactive as soon as the notification arrives', async () => {
    const token = await machineToken(a);
    expect(await active(b, token)).toBe(true);
    expect(await active(b, token)).toBe(true); // from memory
    const r = await revoke(a, machine, token);
    expect(r.status).toBe(200);
    const started = Date.now();
    await eventually(async () => !(await active(b, token)), INTROSPECTION_CACHE_TTL_MS);
    // Dropped by the notification, not by the bound.
    expect(Date.now() - started).toBeLessThan(INTROSPECTION_CACHE_TTL_MS);
  });

  it('makes a token revoked in the same process inactive at once, even without the notification', async () => {
    const token = await machineToken(b);
    expect(await active(b, token)).toBe(true);
    await withoutNotification(async () => {
      expect((await revoke(b, machine, token)).status).toBe(200);
      expect((await introspect(b, token)).body).toEqual({ active: false });
    });
  });

  it('drops a client’s tokens deleted through the admin API of another process', async () => {
    const token = await machineToken(a);
    expect(await active(b, token)).toBe(true);
    const del = await fetch(`${a.adminUrl}/admin/oauth2/tokens?client_id=${encodeURIComponent(machine.client_id)}`, {
      method: 'DELETE',
    });
    expect(del.status).toBe(204);
    await eventually(async () => !(await active(b, token)), INTROSPECTION_CACHE_TTL_MS);
    expect((await introspect(b, token)).body).toEqual({ active: false });
  });

  it('still checks the requested scope on a token answered from memory', async () => {
    const token = await machineToken(a);
    expect(await active(b, token)).toBe(true);
    expect((await introspect(b, token, { scope: 'write' })).body).toEqual({ active: false });
    expect((await introspect(b, token, { scope: 'read' })).body.active).toBe(true);
  });
});

describe('clients kept in memory for the token endpoint', () => {
  it('a client changed through this process is read anew at once, without waiting for the notification', async () => {
    const c = await createClient(a, { grant_types: ['client_credentials'], scope: 'read write', response_types: [] });
    expect((await tokenRequest(a, c, { grant_type: 'client_credentials', scope: 'write' })).status).toBe(200); // kept
    const trigger = (on: boolean) =>
      a.container.pool.query(
        `alter table oauth2_clients ${on ? 'enable' : 'disable'} trigger oauth2_clients_notify_change`,
      );
    // No notification arrives for this change: only what the process did itself can drop its entry.
    await trigger(false);
    try {
      const r = await fetch(`${a.adminUrl}/admin/clients/${c.client_id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([{ op: 'replace', path: '/scope', value: 'read' }]),
      });
      expect(r.status).toBe(200);
      const t = await tokenRequest(a, c, { grant_type: 'client_credentials', scope: 'write' });
      expect([t.status, t.body.error]).toEqual([400, 'invalid_scope']);
    } finally {
      await trigger(true);
    }
  });
});
