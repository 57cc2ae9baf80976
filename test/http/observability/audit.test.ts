/**
 * Audit events with `audit.enabled`: a full login → consent → token → refresh → revoke → reuse →
 * logout run and a SCIM change leave the expected events (actor, target, outcome, request id);
 * `GET /admin/audit/events` filters and pages; a rolled-back change leaves no row; the table is
 * append-only; nothing secret, token-shaped or address-like is ever recorded; retention purge.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeAuditEvents } from '../../../src/core/audit/store.ts';
import { withTx } from '../../../src/core/db/tx.ts';
import { runInScope } from '../../../src/core/observability/scope.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { parseLink } from '../../helpers/clients.ts';
import { API_KEY, createDirectory, scimClient } from '../../helpers/dsync.ts';
import { acceptLogout } from '../../helpers/logout.ts';
import { Browser, codeFlowUrl, createClient, exchangeCode, param, runFlow } from '../../helpers/oauth2.ts';
import { refresh, revoke } from '../../helpers/tokens.ts';
import { scimUser } from '../../helpers/webhooks.ts';

interface Ev {
  id: string;
  time: string;
  type: string;
  actor: { kind: string; id: string };
  target: { kind: string; id: string };
  outcome: string;
  request_id: string;
  trace_id: string;
  details: Record<string, unknown>;
}

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ overrides: { 'audit.enabled': true, 'dsync.api_keys': [API_KEY] } });
});
afterAll(() => t?.close());

async function events(query = ''): Promise<{ status: number; body: Ev[]; link: string | null }> {
  const r = await fetch(`${t.adminUrl}/admin/audit/events${query}`);
  return { status: r.status, body: (await r.json()) as Ev[], link: r.headers.get('link') };
}

const POST_LOGOUT = 'http://127.0.0.1:9999/logged-out';
const secrets: string[] = [];

describe('the audit trail of an OAuth 2.0 / OpenID Connect run', () => {
  let clientId = '';
  it('records client, login, consent, token, refresh, revoke, reuse and logout events in order', async () => {
    const client = await createClient(t, { post_logout_redirect_uris: [POST_LOGOUT] });
    clientId = client.client_id;
    secrets.push(client.client_secret as string);
    const browser = new Browser();
    const flow = await runFlow(t, browser, codeFlowUrl(t, client, 'openid offline'), {
      login: () => ({ subject: 'alice', remember: true }),
    });
    const tok = await exchangeCode(t, client, param(flow.final, 'code') as string);
    expect(tok.status).toBe(200);
    const first = tok.body as Record<string, string>;
    const rotated = await refresh(t, client, first.refresh_token as string);
    expect(rotated.status).toBe(200);
    expect((await refresh(t, client, first.refresh_token as string)).status).toBe(400); // reuse: grant revoked
    secrets.push(first.access_token as string, first.refresh_token as string, rotated.body.access_token);
    // A second grant in the same browser (login remembered), revoked by the client.
    const again = await runFlow(t, browser, codeFlowUrl(t, client, 'openid offline'));
    expect(again.loginSeen?.skip).toBe(true);
    const second = await exchangeCode(t, client, param(again.final, 'code') as string);
    expect(second.status).toBe(200);
    expect((await revoke(t, client, second.body.refresh_token as string)).status).toBe(200);

    const start = await browser.get(
      `${t.publicUrl}/oauth2/sessions/logout?${new URLSearchParams({
        id_token_hint: first.id_token as string,
        post_logout_redirect_uri: POST_LOGOUT,
      })}`,
    );
    expect(start.status).toBe(302);
    const done = await acceptLogout(t, browser, start.location);
    expect(done.location).toBe(POST_LOGOUT);

    const { status, body } = await events();
    expect(status).toBe(200);
    const run = body.reverse(); // oldest first
    expect(run.map((e) => e.type)).toEqual([
      'oauth2.client.created',
      'oauth2.login.accepted',
      'oauth2.consent.granted',
      'oauth2.tokens.issued',
      'oauth2.tokens.refreshed',
      'oauth2.refresh_token.reuse_detected',
      'oauth2.login.accepted',
      'oauth2.consent.granted',
      'oauth2.tokens.issued',
      'oauth2.tokens.revoked',
      'oauth2.logout',
    ]);
    const [created, login, consent, issued, refreshed, reuse, login2, , issued2, revoked, logout] = run as Ev[];
    expect(created).toMatchObject({ actor: { kind: 'admin' }, target: { kind: 'client', id: clientId } });
    expect(login).toMatchObject({
      actor: { kind: 'subject', id: 'alice' },
      target: { kind: 'client', id: clientId },
      outcome: 'success',
      details: { remember: true },
    });
    expect(consent).toMatchObject({
      actor: { kind: 'subject', id: 'alice' },
      details: { scope: ['openid', 'offline'] },
    });
    expect(issued).toMatchObject({
      actor: { kind: 'client', id: clientId },
      target: { kind: 'grant' },
      details: { grant: 'authorization_code', subject: 'alice', refresh_token_issued: true },
    });
    expect(refreshed?.target.id).toBe(issued?.target.id);
    expect(login2).toMatchObject({ actor: { id: 'alice' }, details: { skipped: true } });
    expect(revoked).toMatchObject({
      actor: { kind: 'client', id: clientId },
      target: { kind: 'grant', id: issued2?.target.id },
      details: { token_type: 'refresh_token' },
    });
    expect(issued2?.target.id).not.toBe(issued?.target.id);
    expect(reuse).toMatchObject({ outcome: 'failure', target: { kind: 'grant', id: issued?.target.id } });
    expect(logout).toMatchObject({ actor: { kind: 'subject', id: 'alice' }, target: { kind: 'session' } });
    // Every event of an HTTP request carries its request id, and ids grow with time.
    for (const e of run) {
      expect(e.request_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(Date.parse(e.time)).toBeGreaterThan(Date.now() - 60_000);
    }
    expect(new Set(run.map((e) => e.request_id)).size).toBe(run.length);
  });

  it('records a rejected login with outcome failure and the request id the caller sent', async () => {
    const client = await createClient(t);
    const flow = await runFlow(t, new Browser(), codeFlowUrl(t, client, 'openid'), { login: () => false });
    expect(param(flow.final, 'error')).toBe('access_denied');
    const { body } = await events(`?type=oauth2.login.rejected&target=${client.client_id}`);
    expect(body).toHaveLength(1);
    expect(body[0]).toMatchObject({
      outcome: 'failure',
      actor: { kind: 'admin' },
      details: { error: 'access_denied' },
    });

    const r = await fetch(`${t.adminUrl}/admin/clients/${client.client_id}`, {
      method: 'DELETE',
      headers: { 'x-request-id': 'audit-req-1' },
    });
    expect(r.status).toBe(204);
    const del = await events('?type=oauth2.client.deleted');
    expect(del.body[0]).toMatchObject({ request_id: 'audit-req-1', target: { id: client.client_id } });
  });

  it('filters by type, actor, target and time range', async () => {
    const all = (await events()).body;
    const types = (await events('?type=oauth2.tokens.issued,oauth2.tokens.refreshed')).body;
    expect(types.length).toBe(
      all.filter((e) => e.type.startsWith('oauth2.tokens.i') || e.type.endsWith('refreshed')).length,
    );
    expect(types.every((e) => ['oauth2.tokens.issued', 'oauth2.tokens.refreshed'].includes(e.type))).toBe(true);
    const repeated = (await events('?type=oauth2.tokens.issued&type=oauth2.tokens.refreshed')).body;
    expect(repeated.map((e) => e.id)).toEqual(types.map((e) => e.id));

    const alice = (await events('?actor=alice')).body;
    expect(alice.length).toBeGreaterThanOrEqual(3);
    expect(alice.every((e) => e.actor.id === 'alice')).toBe(true);
    const onClient = (await events(`?target=${clientId}&target_kind=client`)).body;
    expect(onClient.map((e) => e.type).sort()).toEqual(
      [
        'oauth2.client.created',
        'oauth2.consent.granted',
        'oauth2.consent.granted',
        'oauth2.login.accepted',
        'oauth2.login.accepted',
      ].sort(),
    );
    const admin = (await events('?actor_kind=admin')).body;
    expect(admin.every((e) => e.actor.kind === 'admin')).toBe(true);

    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await events(`?since=${future}`)).body).toEqual([]);
    expect((await events(`?until=${future}`)).body.length).toBe(all.length);
    const mid = all[Math.floor(all.length / 2)] as Ev;
    const since = (await events(`?since=${encodeURIComponent(mid.time)}`)).body;
    expect(since.every((e) => Date.parse(e.time) >= Date.parse(mid.time))).toBe(true);
    expect(since.some((e) => e.id === mid.id)).toBe(true);
    const until = (await events(`?until=${encodeURIComponent(mid.time)}`)).body;
    expect(until.every((e) => Date.parse(e.time) < Date.parse(mid.time))).toBe(true);
  });

  it('answers 400 with a Hydra error to an unknown type, a bad time or a bad page token', async () => {
    for (const q of ['?type=oauth2.nope', '?since=yesterday', '?until=2026-13-45T00:00:00Z', '?page_token=xyz']) {
      const r = await fetch(`${t.adminUrl}/admin/audit/events${q}`);
      expect(r.status).toBe(400);
      const body = (await r.json()) as { error: string; error_description: string };
      expect(body.error).toBeTruthy();
      expect(body.error_description).toBeTruthy();
    }
  });

  it('pages newest first with page_size and the Link header, every event exactly once', async () => {
    const all = (await events()).body;
    expect(all.length).toBeGreaterThan(5);
    const ids = all.map((e) => Number(e.id));
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
    const seen: string[] = [];
    let next: string | undefined = '/admin/audit/events?page_size=3';
    let pages = 0;
    while (next && pages < 20) {
      const r = await fetch(`${t.adminUrl}${next}`);
      expect(r.status).toBe(200);
      const page = (await r.json()) as Ev[];
      expect(page.length).toBeLessThanOrEqual(3);
      seen.push(...page.map((e) => e.id));
      next = parseLink(r.headers.get('link')).next;
      pages++;
    }
    expect(seen).toEqual(all.map((e) => e.id));
    expect(pages).toBe(Math.ceil(all.length / 3));
    // Filters hold across pages.
    const first = await fetch(`${t.adminUrl}/admin/audit/events?page_size=1&actor=alice`);
    const link = parseLink(first.headers.get('link')).next as string;
    expect(link).toContain('actor=alice');
    const second = (await (await fetch(`${t.adminUrl}${link}`)).json()) as Ev[];
    expect(second[0]?.actor.id).toBe('alice');
  });
});

describe('directory-sync audit events', () => {
  it('records the directory creation by the API caller and a SCIM change by its directory', async () => {
    const d = await createDirectory(t, { tenant: 'audit', product: 'p', webhook_url: '', webhook_secret: '' });
    secrets.push(d.scim.secret);
    const r = await scimClient(t, d)('POST', '/Users', scimUser('audit1'));
    expect(r.status).toBe(201);
    const userId = (r.body as { id: string }).id;
    const dup = await scimClient(t, d)('POST', '/Users', scimUser('audit1'));
    expect(dup.status).toBe(409);

    const created = (await events(`?type=dsync.directory.created&target=${d.id}`)).body;
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({
      actor: { kind: 'api_key' },
      details: { directory_type: 'okta-scim-v2', tenant: 'audit', product: 'p' },
    });
    const changes = (await events(`?type=dsync.scim.change&actor=${d.id}`)).body;
    expect(changes).toHaveLength(1); // the 409 rolled back: no event
    expect(changes[0]).toMatchObject({
      actor: { kind: 'directory', id: d.id },
      target: { kind: 'user', id: userId },
      outcome: 'success',
      details: { directory_type: 'okta-scim-v2', events: ['user.created'] },
    });

    const upd = await fetch(`${t.adminUrl}/api/v1/dsync/${d.id}`, {
      method: 'PATCH',
      headers: { authorization: `Api-Key ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'renamed', webhook_secret: 'whsec-never-in-audit' }),
    });
    expect(upd.status).toBe(200);
    const changed = (await events(`?type=dsync.directory.changed&target=${d.id}`)).body;
    expect(changed).toHaveLength(1);
    expect(JSON.stringify(changed)).not.toContain('whsec-never-in-audit');
  });
});

describe('setup links', () => {
  it('records the use of a setup link, and the link as the actor of the directory it creates', async () => {
    const created = await fetch(`${t.adminUrl}/api/v1/dsync/setuplinks`, {
      method: 'POST',
      headers: { authorization: `Api-Key ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        tenant: 'setup-audit',
        product: 'crm',
        webhook_url: 'https://app.example.com/hook',
        webhook_secret: 'app-secret-never-in-audit',
      }),
    });
    expect(created.status).toBe(201);
    const link = ((await created.json()) as { data: { setupID: string; url: string } }).data;
    const token = link.url.split('/').pop() as string;
    secrets.push(token, 'app-secret-never-in-audit');
    const r = await fetch(`${t.publicUrl}/api/setup/${token}/directory-sync`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'okta-scim-v2' }),
    });
    expect(r.status).toBe(201);
    const id = ((await r.json()) as { data: { id: string } }).data.id;
    const used = (await events(`?type=dsync.setup_link.used&target=${link.setupID}`)).body;
    expect(used).toHaveLength(1);
    expect(used[0]).toMatchObject({
      actor: { kind: 'setup_link', id: link.setupID },
      target: { kind: 'setup_link', id: link.setupID },
      details: { action: 'create_directory', directory: id, tenant: 'setup-audit', product: 'crm' },
    });
    const dir = (await events(`?type=dsync.directory.created&target=${id}`)).body;
    expect(dir[0]?.actor).toEqual({ kind: 'setup_link', id: link.setupID });
  });
});

describe('transactions, append-only storage and sanitising', () => {
  it('leaves no row for a change that rolled back', async () => {
    const count = async () =>
      Number(
        (await sql<{ n: number }>`select count(*)::int as n from audit_events`.execute(t.container.db)).rows[0]?.n,
      );
    const before = await count();
    await expect(
      withTx(t.container.db, async (trx) => {
        await sql`insert into oauth2_jti_blacklist (nid, signature, expires_at)
          values ('00000000-0000-4000-8000-000000000000', 'rolled-back', now())`.execute(trx);
        await t.container.audit.record(trx, {
          type: 'oauth2.client.updated',
          target: { kind: 'client', id: 'rolled-back' },
        });
        throw new Error('the change fails after its audit event was written');
      }),
    ).rejects.toThrow(/fails after/);
    expect(await count()).toBe(before);
    await withTx(t.container.db, (trx) =>
      t.container.audit.record(trx, { type: 'oauth2.client.updated', target: { kind: 'client', id: 'committed' } }),
    );
    expect(await count()).toBe(before + 1);
  });

  it('refuses updates and deletes outside the retention purge', async () => {
    await expect(sql`update audit_events set outcome = 'failure'`.execute(t.container.db)).rejects.toThrow(
      /append-only/,
    );
    await expect(sql`delete from audit_events`.execute(t.container.db)).rejects.toThrow(/append-only/);
    await expect(sql`truncate audit_events`.execute(t.container.db)).rejects.toThrow(/append-only/);
  });

  it('passes every event through the log sanitiser: no secret, token or address', async () => {
    await runInScope({ requestId: 'sanitise-1', listener: 'admin' }, () =>
      t.container.audit.record(t.container.db, {
        type: 'oauth2.client.updated',
        target: { kind: 'client', id: 'from 10.1.2.3' },
        details: {
          client_secret: 'super-secret-value',
          note: 'seen from 192.168.7.9 and 2001:db8::1 with ory_at_abc.def and Bearer abc.def.ghi',
          webhook_token: 'tok-123',
        },
      }),
    );
    const [row] = (await events('?target_kind=client&type=oauth2.client.updated')).body.filter(
      (e) => e.request_id === 'sanitise-1',
    );
    expect(row).toBeDefined();
    const text = JSON.stringify(row);
    for (const leak of [
      'super-secret-value',
      '10.1.2.3',
      '192.168.7.9',
      '2001:db8::1',
      'ory_at_abc',
      'abc.def.ghi',
      'tok-123',
    ])
      expect(text).not.toContain(leak);
    expect(row?.details.client_secret).toBe('[redacted]');
    expect(row?.details.webhook_token).toBe('[redacted]');
    expect(String(row?.details.note)).toContain('[address]');

    // And the real events of the runs above hold none of the secrets and tokens they handled.
    const all = JSON.stringify((await events('?page_size=500')).body);
    for (const s of secrets) expect(all).not.toContain(s);
    expect(all).not.toContain('127.0.0.1');
  });

  it('purges events older than the retention in bounded batches', async () => {
    const total = (await events('?page_size=500')).body.length;
    const r = await purgeAuditEvents(t.container.db, {
      olderThan: new Date(Date.now() + 60_000),
      batchSize: 2,
      limit: 4,
    });
    expect(r).toEqual({ deleted: 4, more: true });
    expect((await events('?page_size=500')).body.length).toBe(total - 4);
    const rest = await purgeAuditEvents(t.container.db, {
      olderThan: new Date(Date.now() + 60_000),
      batchSize: 1000,
      limit: 10_000,
    });
    expect(rest).toEqual({ deleted: total - 4, more: false });
    expect((await events()).body).toEqual([]);
  });
});

describe('audit.enabled off (the default)', () => {
  it('writes no rows', async () => {
    const off = await startTestServer();
    try {
      await createClient(off);
      const r = await sql<{ n: number }>`select count(*)::int as n from audit_events`.execute(off.container.db);
      expect(r.rows[0]?.n).toBe(0);
      expect(off.container.config.audit.enabled).toBe(false);
    } finally {
      await off.close();
    }
  });
});
