/**
 * Rate limiting of guessable secrets: failed client authentications and failed SCIM bearer checks,
 * per credential and per source address, 429 + Retry-After, counted in PostgreSQL (a second
 * process on the same database sees the same counts), switchable off, and no write on success.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, startDsyncServer } from '../../helpers/dsync.ts';
import { basicToken, type FailedAuthPair, failedAuthPair } from '../../helpers/failed-auth.ts';
import { expectErrorBody, send } from '../../helpers/fuzz.ts';
import { type CreatedClient, createClient } from '../../helpers/oauth2.ts';

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

const rows = async (s: TestServer) =>
  Number((await sql<{ n: number }>`SELECT count(*)::int AS n FROM auth_failures`.execute(s.container.db)).rows[0]?.n);

describe('failed client authentications', () => {
  let pair: FailedAuthPair;
  let clock: FailedAuthPair['clock'];
  let s: TestServer;
  let other: TestServer;
  let a: CreatedClient;
  let b: CreatedClient;
  beforeAll(async () => {
    pair = await failedAuthPair();
    ({ clock, s, other, a, b } = pair);
  });
  afterAll(() => pair?.close());

  it('succeeding requests write nothing', async () => {
    for (let i = 0; i < 5; i++) expect((await basicToken(s, a.client_id, a.client_secret ?? '')).status).toBe(200);
    expect(await rows(s)).toBe(0);
  });

  it('refuses a client with 429 + Retry-After after per_credential failures, in every process, until the window ends', async () => {
    for (let i = 0; i < 3; i++) expect((await basicToken(s, a.client_id, 'wrong-secret')).status).toBe(401);
    const blocked = await basicToken(s, a.client_id, a.client_secret ?? '');
    expect(blocked.status).toBe(429);
    expectErrorBody(blocked, 'hydra', '429');
    expect(JSON.parse(blocked.text)).toEqual({
      error: 'too_many_requests',
      error_description: 'Too many failed authentication attempts, try again later.',
    });
    expect(blocked.headers.get('retry-after')).toBe('50'); // the window ends at 00:01:00
    // Another process on the same database refuses it too; another client is not affected.
    expect((await basicToken(other, a.client_id, a.client_secret ?? '')).status).toBe(429);
    expect((await basicToken(other, b.client_id, b.client_secret ?? '')).status).toBe(200);
    // Revocation authenticates the client too, and is refused the same way.
    const revoke = await send(`${s.publicUrl}/oauth2/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        token: 'x',
        client_id: a.client_id,
        client_secret: a.client_secret ?? '',
      }).toString(),
    });
    expect(revoke.status).toBe(429);
    clock.advance(50_000);
    expect((await basicToken(s, a.client_id, a.client_secret ?? '')).status).toBe(200);
  });
});

describe('failed authentications per source address', () => {
  let s: TestServer;
  let a: CreatedClient;
  beforeAll(async () => {
    s = await startTestServer({
      overrides: { 'rate_limit.failed_auth.per_credential': 0, 'rate_limit.failed_auth.per_address': 4 },
    });
    servers.push(s);
    a = await createClient(s, { grant_types: ['client_credentials'] });
  });

  it('counts failures with ever new client ids against the address', async () => {
    for (let i = 0; i < 4; i++) expect((await basicToken(s, `guess-${i}`, 'x')).status).toBe(401);
    const r = await basicToken(s, a.client_id, a.client_secret ?? '');
    expect(r.status).toBe(429);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    // Stored keys are digests: neither the client ids nor the address appear.
    const keys = (await sql<{ key: string }>`SELECT key FROM auth_failures`.execute(s.container.db)).rows;
    expect(keys.length).toBe(1);
    expect(keys[0]?.key).toMatch(/^[A-Za-z0-9_-]{32}$/);
  });
});

describe('failed SCIM bearer checks', () => {
  let s: TestServer;
  let d1: DirectoryRecord;
  let d2: DirectoryRecord;
  beforeAll(async () => {
    s = await startDsyncServer({ 'rate_limit.failed_auth.per_credential': 3, 'rate_limit.failed_auth.per_address': 0 });
    servers.push(s);
    d1 = await createDirectory(s, { tenant: 'one' });
    d2 = await createDirectory(s, { tenant: 'two' });
  });
  const users = (d: DirectoryRecord, secret: string) =>
    send(`${s.publicUrl}${new URL(d.scim.endpoint ?? '').pathname}/Users`, {
      headers: { authorization: `Bearer ${secret}` },
    });

  it('refuses a directory with a SCIM 429 after per_credential failures; other directories go on', async () => {
    for (let i = 0; i < 3; i++) expect((await users(d1, 'wrong')).status).toBe(401);
    const r = await users(d1, d1.scim.secret);
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
    expectErrorBody(r, 'scim', 'scim 429');
    expect(JSON.parse(r.text).detail).toBe('Too many failed authentication attempts, try again later.');
    expect((await users(d2, d2.scim.secret)).status).toBe(200);
  });
});

describe('switched off', () => {
  it('rate_limit.failed_auth.enabled: false never refuses and counts nothing', async () => {
    const s = await startTestServer({
      overrides: { 'rate_limit.failed_auth.enabled': false, 'rate_limit.failed_auth.per_credential': 1 },
    });
    servers.push(s);
    const a = await createClient(s, { grant_types: ['client_credentials'] });
    for (let i = 0; i < 5; i++) expect((await basicToken(s, a.client_id, 'wrong')).status).toBe(401);
    expect((await basicToken(s, a.client_id, a.client_secret ?? '')).status).toBe(200);
    expect(await rows(s)).toBe(0);
  });
});
