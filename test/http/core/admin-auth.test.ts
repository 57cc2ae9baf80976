/**
 * Authentication of the admin API (`serve.admin.auth`, beyond Hydra: ory/hydra#2041), through real
 * HTTP on real PostgreSQL: off by default; when on, API keys (by SHA-256) and client_credentials
 * access tokens with `gatehouse:admin[:<family>]` scopes, 401 with an RFC 6750 challenge, 403 for a
 * family the credential lacks, health and version open, the failed-authentication limiter, audit
 * events naming the caller, the CLI's `--token` / GATEHOUSE_ADMIN_TOKEN and `admin-key hash`, the
 * configuration refusing plaintext keys, and the Hydra SDK with `accessToken`.
 */
import { createHash } from 'node:crypto';
import { Configuration, JwkApi, OAuth2Api } from '@ory/hydra-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.ts';
import { auditRow } from '../../../src/core/audit/events.ts';
import { manualClock } from '../../../src/core/clock.ts';
import { adminGuard, hashAdminKey } from '../../../src/core/http/admin-auth.ts';
import { listenerRoutes } from '../../../src/core/http/routes.ts';
import { runInScope, setCaller } from '../../../src/core/observability/scope.ts';
import { createMachineCallers } from '../../../src/oauth2/token/machine-caller.ts';
import { eventually, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';
import { call } from '../../helpers/clients.ts';
import { problems } from '../../helpers/config.ts';
import { revoke, tokenRequest } from '../../helpers/tokens.ts';

const ALL_KEY = 'gha_test-admin-key-with-every-family-0001';
const KEYS_ONLY_KEY = 'gha_test-admin-key-for-key-sets-only-0002';
const CLIENTS_KEY = 'gha_test-admin-key-for-clients-only-0003';
const idOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 8);
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const CHALLENGE = 'Bearer realm="gatehouse-admin"';

let off: TestServer;
let on: TestServer;
beforeAll(async () => {
  [off, on] = await Promise.all([
    startTestServer(),
    startTestServer({
      overrides: {
        'serve.admin.auth.enabled': true,
        'serve.admin.auth.api_keys': [
          hashAdminKey(ALL_KEY),
          `${hashAdminKey(KEYS_ONLY_KEY)}:keys`,
          `${hashAdminKey(CLIENTS_KEY)}:clients,audit`,
        ],
        'audit.enabled': true,
        // The suite's own failures all come from 127.0.0.1; the limiter has a test of its own below.
        'rate_limit.failed_auth.per_address': 10_000,
      },
    }),
  ]);
});
afterAll(async () => Promise.all([off?.close(), on?.close()]));

/** A client_credentials client created with the all-families key, and a token of it for `scope`. */
async function adminClient(scope: string, lifespan?: string) {
  const created = await call(
    on.adminUrl,
    'POST',
    '/admin/clients',
    { grant_types: ['client_credentials'], scope, token_endpoint_auth_method: 'client_secret_basic' },
    bearer(ALL_KEY),
  );
  expect(created.status).toBe(201);
  const client = created.body as { client_id: string; client_secret: string };
  if (lifespan) {
    const set = await call(
      on.adminUrl,
      'PUT',
      `/admin/clients/${client.client_id}/lifespans`,
      { client_credentials_grant_access_token_lifespan: lifespan },
      bearer(ALL_KEY),
    );
    expect(set.status).toBe(200);
  }
  const token = await tokenRequest(on, client, { grant_type: 'client_credentials', scope });
  expect(token.status).toBe(200);
  return { client, token: token.body.access_token as string };
}

describe('admin API authentication off (the default, as Hydra)', () => {
  it('answers admin calls without any credential', async () => {
    const list = await call(off.adminUrl, 'GET', '/admin/clients');
    expect(list.status).toBe(200);
    const keys = await call(off.adminUrl, 'POST', '/admin/keys/open-set', { alg: 'ES256', use: 'sig', kid: 'k1' });
    expect(keys.status).toBe(201);
    expect(off.container.config.serve.admin.auth.enabled).toBe(false);
  });
});

describe('admin API authentication on', () => {
  it('refuses a request without a credential: 401, the RFC 6750 challenge and a Hydra error body', async () => {
    const r = await call(on.adminUrl, 'GET', '/admin/clients');
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe(CHALLENGE);
    expect(r.body).toEqual({
      error: 'The request could not be authorized',
      error_description: expect.stringContaining('Authorization: Bearer'),
    });
    // Another scheme is no credential either.
    const basic = await call(on.adminUrl, 'GET', '/admin/clients', undefined, { authorization: `Basic ${ALL_KEY}` });
    expect(basic.status).toBe(401);
  });

  it('refuses a wrong key with 401 invalid_token, and never echoes it', async () => {
    const r = await call(on.adminUrl, 'GET', '/admin/clients', undefined, bearer('gha_not-a-configured-key-000'));
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe(`${CHALLENGE}, error="invalid_token"`);
    expect(JSON.stringify(r.body)).not.toContain('not-a-configured-key');
    // The plaintext of a configured digest is the key, not the digest itself.
    const digest = hashAdminKey(ALL_KEY);
    expect((await call(on.adminUrl, 'GET', '/admin/clients', undefined, bearer(digest))).status).toBe(401);
  });

  it('refuses a key without the route family’s scope with 403, and lets one with it through', async () => {
    const clients = await call(on.adminUrl, 'GET', '/admin/clients', undefined, bearer(KEYS_ONLY_KEY));
    expect(clients.status).toBe(403);
    expect(clients.body).toMatchObject({ error: 'The requested action was forbidden' });
    expect(clients.headers.get('www-authenticate')).toBe(
      `${CHALLENGE}, error="insufficient_scope", scope="gatehouse:admin:clients"`,
    );
    const keys = await call(
      on.adminUrl,
      'POST',
      '/admin/keys/scoped-set',
      { alg: 'ES256', use: 'sig', kid: 'k1' },
      bearer(KEYS_ONLY_KEY),
    );
    expect(keys.status).toBe(201);
    expect((await call(on.adminUrl, 'GET', '/admin/clients', undefined, bearer(CLIENTS_KEY))).status).toBe(200);
    expect((await call(on.adminUrl, 'GET', '/admin/keys/scoped-set', undefined, bearer(CLIENTS_KEY))).status).toBe(403);
  });

  it('lets a key with no families listed call every family', async () => {
    for (const path of [
      '/admin/clients',
      '/admin/keys/scoped-set',
      '/admin/trust/grants/jwt-bearer/issuers',
      '/admin/audit/events',
      '/admin/metrics/prometheus',
      '/admin/openapi.json',
      '/admin/oauth2/auth/sessions/consent?subject=nobody',
    ]) {
      const r = await fetch(`${on.adminUrl}${path}`, { headers: bearer(ALL_KEY) });
      await r.arrayBuffer();
      expect(r.status, path).toBe(200);
    }
  });

  it('keeps health and version open, under /admin and without it', async () => {
    for (const path of ['/health/alive', '/health/ready', '/version', '/admin/health/alive', '/admin/version']) {
      const r = await fetch(`${on.adminUrl}${path}`);
      await r.arrayBuffer();
      expect(r.status, path).toBe(200);
    }
    // And only those: metrics need a credential.
    expect((await fetch(`${on.adminUrl}/admin/metrics/prometheus`)).status).toBe(401);
  });

  it('accepts a client_credentials token with gatehouse:admin:clients for clients, 403 for keys', async () => {
    const { token } = await adminClient('gatehouse:admin:clients');
    const created = await call(
      on.adminUrl,
      'POST',
      '/admin/clients',
      { client_id: 'made-by-token', grant_types: ['client_credentials'] },
      bearer(token),
    );
    expect(created.status).toBe(201);
    expect((await call(on.adminUrl, 'DELETE', '/admin/clients/made-by-token', undefined, bearer(token))).status).toBe(
      204,
    );
    const keys = await call(on.adminUrl, 'GET', '/admin/keys/scoped-set', undefined, bearer(token));
    expect(keys.status).toBe(403);
    // `gatehouse:admin` is every family.
    const { token: all } = await adminClient('gatehouse:admin');
    expect((await call(on.adminUrl, 'GET', '/admin/keys/scoped-set', undefined, bearer(all))).status).toBe(200);
  });

  it('refuses a token without an admin scope, a revoked token and an expired one with 401', async () => {
    const { token: plain } = await adminClient('read');
    expect((await call(on.adminUrl, 'GET', '/admin/clients', undefined, bearer(plain))).status).toBe(401);

    const { client, token } = await adminClient('gatehouse:admin:clients');
    expect((await call(on.adminUrl, 'GET', '/admin/clients', undefined, bearer(token))).status).toBe(200);
    expect((await revoke(on, client, token)).status).toBe(200);
    const revoked = await call(on.adminUrl, 'GET', '/admin/clients', undefined, bearer(token));
    expect(revoked.status).toBe(401);
    expect(revoked.headers.get('www-authenticate')).toBe(`${CHALLENGE}, error="invalid_token"`);

    const { token: brief } = await adminClient('gatehouse:admin:clients', '1s');
    await eventually(
      async () => (await call(on.adminUrl, 'GET', '/admin/clients', undefined, bearer(brief))).status === 401,
      5_000,
    );
  });

  it('refuses a token that carries gatehouse:admin but stands for a subject: one from a token exchange', async () => {
    const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
    const created = await call(
      on.adminUrl,
      'POST',
      '/admin/clients',
      { grant_types: ['client_credentials', GRANT], scope: 'gatehouse:admin' },
      bearer(ALL_KEY),
    );
    const client = created.body as { client_id: string; client_secret: string };
    const own = await tokenRequest(on, client, { grant_type: 'client_credentials', scope: 'gatehouse:admin' });
    const machine = own.body.access_token as string;
    expect((await call(on.adminUrl, 'GET', '/admin/clients', undefined, bearer(machine))).status).toBe(200);
    const exchanged = await tokenRequest(on, client, {
      grant_type: GRANT,
      subject_token: machine,
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    });
    expect(exchanged.status).toBe(200);
    expect(exchanged.body.scope).toBe('gatehouse:admin');
    const r = await call(
      on.adminUrl,
      'GET',
      '/admin/clients',
      undefined,
      bearer(exchanged.body.access_token as string),
    );
    expect(r.status).toBe(401);
  });

  it('records audit events naming the key (first 8 hex of its hash) or the token’s client', async () => {
    const byKey = await call(
      on.adminUrl,
      'POST',
      '/admin/clients',
      { client_id: 'audited-by-key' },
      bearer(CLIENTS_KEY),
    );
    expect(byKey.status).toBe(201);
    const { client, token } = await adminClient('gatehouse:admin:clients');
    const byToken = await call(on.adminUrl, 'POST', '/admin/clients', { client_id: 'audited-by-token' }, bearer(token));
    expect(byToken.status).toBe(201);
    const events = await call(
      on.adminUrl,
      'GET',
      '/admin/audit/events?type=oauth2.client.created&target_kind=client',
      undefined,
      bearer(CLIENTS_KEY),
    );
    expect(events.status).toBe(200);
    const list = events.body as Array<{ actor: { kind: string; id: string }; target: { id: string } }>;
    const actorOf = (id: string) => list.find((e) => e.target.id === id)?.actor;
    expect(actorOf('audited-by-key')).toEqual({ kind: 'api_key', id: idOf(CLIENTS_KEY) });
    expect(actorOf('audited-by-token')).toEqual({ kind: 'client', id: client.client_id });
    expect(JSON.stringify(list)).not.toContain(CLIENTS_KEY);
  });

  it('an event that names another actor (a login accepted for its subject) also names the caller', () => {
    const row = runInScope({ requestId: 'r1', listener: 'admin' }, () => {
      setCaller({ kind: 'api_key', id: 'abcd1234' });
      return auditRow({
        type: 'oauth2.login.accepted',
        actor: { kind: 'subject', id: 'alice' },
        target: { kind: 'client', id: 'c1' },
      });
    });
    expect(row.actor_kind).toBe('subject');
    expect(row.details).toEqual({ caller: 'api_key:abcd1234' });
  });

  it('works with the Hydra SDK given the header; its accessToken is sent only on registration calls', async () => {
    // The SDK follows Hydra's OpenAPI document, where admin operations have no security scheme
    // (ory/hydra#2041): `accessToken` reaches only the dynamic registration calls, so admin
    // callers set the header through `baseOptions`.
    const withKey = (key: string) =>
      new Configuration({ basePath: on.adminUrl, baseOptions: { headers: { Authorization: `Bearer ${key}` } } });
    const sdk = new OAuth2Api(withKey(ALL_KEY));
    const created = await sdk.createOAuth2Client({ oAuth2Client: { client_id: 'sdk-made', scope: 'read' } });
    expect(created.status).toBe(201);
    expect((await sdk.getOAuth2Client({ id: 'sdk-made' })).data.scope).toBe('read');
    const jwk = new JwkApi(withKey(KEYS_ONLY_KEY));
    expect((await jwk.getJsonWebKeySet({ set: 'scoped-set' })).data.keys?.length).toBe(1);
    await expect(new OAuth2Api(withKey(KEYS_ONLY_KEY)).getOAuth2Client({ id: 'sdk-made' })).rejects.toMatchObject({
      response: { status: 403 },
    });
    const tokenOnly = new OAuth2Api(new Configuration({ basePath: on.adminUrl, accessToken: ALL_KEY }));
    await expect(tokenOnly.getOAuth2Client({ id: 'sdk-made' })).rejects.toMatchObject({ response: { status: 401 } });
  });
});

describe('failed admin authentications go through the failed-authentication limiter', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({
      overrides: {
        'serve.admin.auth.enabled': true,
        'serve.admin.auth.api_keys': [hashAdminKey(ALL_KEY)],
        'rate_limit.failed_auth.per_address': 3,
      },
      // Failures are counted in fixed windows of the server's clock: a clock that stands still keeps
      // the failures and the blocked attempt in one window (with the real clock, a minute's end
      // between them would start the count again).
      clock: manualClock(),
    });
  });
  afterAll(async () => limited?.close());

  it('answers 429 with Retry-After once an address has failed too often, even with the right key', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await call(limited.adminUrl, 'GET', '/admin/clients', undefined, bearer(`gha_wrong-${i}`))).status).toBe(
        401,
      );
    }
    const blocked = await call(limited.adminUrl, 'GET', '/admin/clients', undefined, bearer(ALL_KEY));
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    // Health stays open.
    expect((await fetch(`${limited.adminUrl}/health/alive`)).status).toBe(200);
  });
});

describe('the CLI', () => {
  it('sends --token and GATEHOUSE_ADMIN_TOKEN as Authorization: Bearer; fails cleanly without', async () => {
    const withFlag = await runCli(
      ['get', 'client', 'sdk-made', '-e', on.adminUrl, '--token', ALL_KEY, '--format', 'json'],
      {},
    );
    expect(withFlag.stderr).toBe('');
    expect(JSON.parse(withFlag.stdout)).toMatchObject({ client_id: 'sdk-made' });
    const withEnv = await runCli(['list', 'clients', '-e', on.adminUrl, '--format', 'json'], {
      GATEHOUSE_ADMIN_TOKEN: CLIENTS_KEY,
    });
    expect(withEnv.code).toBe(0);
    expect(JSON.stringify(JSON.parse(withEnv.stdout))).toContain('sdk-made');
    const jwks = await runCli(['get', 'jwks', 'scoped-set', '-e', on.adminUrl], {
      GATEHOUSE_ADMIN_TOKEN: KEYS_ONLY_KEY,
    });
    expect(jwks.code).toBe(0);
    expect(jwks.stdout).toContain('"kid": "k1"');
    const without = await runCli(['get', 'client', 'sdk-made', '-e', on.adminUrl], {});
    expect(without.code).toBe(1);
    expect(without.stderr).toMatch(/^error: 401 The request could not be authorized/);
    const scoped = await runCli(['introspect', 'token', 'ory_at_x', '-e', on.adminUrl, '--token', KEYS_ONLY_KEY], {});
    expect(scoped.code).toBe(1);
    expect(scoped.stderr).toContain('403');
  });

  it('prints the api_keys entry of a key (argument or stdin) and generates keys the server accepts', async () => {
    const hashed = await runCli(['admin-key', 'hash', ALL_KEY, '--scope', 'clients,keys'], {});
    expect(hashed.stdout.trim()).toBe(`${hashAdminKey(ALL_KEY)}:clients,keys`);
    const piped = await runCli(['admin-key', 'hash'], {}, 30_000, `${ALL_KEY}\n`);
    expect(piped.stdout.trim()).toBe(hashAdminKey(ALL_KEY));
    // The families of the domains, registered by the composition root, are known to the CLI too.
    const domains = await runCli(['admin-key', 'hash', ALL_KEY, '--scope', 'dsync,jobs'], {});
    expect(domains.stdout.trim()).toBe(`${hashAdminKey(ALL_KEY)}:dsync,jobs`);
    const bad = await runCli(['admin-key', 'hash', ALL_KEY, '--scope', 'everything'], {});
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("unknown family 'everything'");

    const generated = await runCli(['admin-key', 'hash', '--generate', '--json'], {});
    const { key, entry, id } = JSON.parse(generated.stdout) as { key: string; entry: string; id: string };
    expect(key).toMatch(/^gha_[\w-]{43}$/);
    expect(entry).toBe(hashAdminKey(key));
    expect(id).toBe(idOf(key));
    const s = await startTestServer({
      overrides: { 'serve.admin.auth.enabled': true, 'serve.admin.auth.api_keys': [entry] },
    });
    try {
      expect((await call(s.adminUrl, 'GET', '/admin/clients', undefined, bearer(key))).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});

describe('declared, not implied', () => {
  const handler = async () => {};
  const tableOf = (policy: Record<string, unknown>) => [
    { method: 'get' as const, path: '/admin/x', policy: { access: 'admin', ...policy }, handlers: [handler], tag: 't' },
  ];
  const limits = { bodyLimits: { default: 1 }, failedAuth: () => handler };

  it('refuses at start-up an admin route without a family, or with one its guard does not know', () => {
    const guards = { admin: adminGuard({ enabled: true, apiKeys: [] }) };
    expect(() => listenerRoutes(tableOf({}), { guards, ...limits })).toThrow(/declares no family of its guard/);
    expect(() => listenerRoutes(tableOf({ family: 'everything' }), { guards, ...limits })).toThrow(
      /no family of its guard/,
    );
    expect(() => listenerRoutes(tableOf({ family: 'clients' }), { guards, ...limits })).not.toThrow();
    const plain = { admin: { description: 'x', open: true } };
    expect(() => listenerRoutes(tableOf({ family: 'clients' }), { guards: plain, ...limits })).toThrow(
      /its guard has none/,
    );
  });

  it('takes only active client_credentials tokens presented without a DPoP key as machine callers', async () => {
    const row = { clientId: 'c1', grantedScope: ['gatehouse:admin'], expiresAt: new Date(Date.now() + 60_000) };
    const callerOf = (session: Record<string, unknown>, r: Record<string, unknown> = row, use = 'access_token') =>
      createMachineCallers({
        clock: { now: () => new Date() },
        lookup: { find: async () => ({ use, row: { ...r, sessionData: JSON.stringify(session) } }) },
        sessions: { open: (s: string) => JSON.parse(s) },
      } as never)('ory_at_x');
    expect(await callerOf({ machine: 'client_credentials' })).toEqual({ clientId: 'c1', scope: ['gatehouse:admin'] });
    // A user's token (authorization code, device, refresh) carries no machine grant.
    expect(await callerOf({})).toBeUndefined();
    expect(await callerOf({ machine: 'jwt_bearer' })).toBeUndefined();
    expect(await callerOf({ machine: 'client_credentials', cnf: { jkt: 'k' } })).toBeUndefined();
    expect(await callerOf({ machine: 'client_credentials' }, { ...row, expiresAt: new Date(0) })).toBeUndefined();
    expect(await callerOf({ machine: 'client_credentials' }, row, 'refresh_token')).toBeUndefined();
  });
});

describe('the configuration', () => {
  it('refuses plaintext keys and unknown families without repeating the entry', () => {
    const refused = problems(() =>
      loadConfig({ env: { SERVE_ADMIN_AUTH_ENABLED: 'true', SERVE_ADMIN_AUTH_API_KEYS: 'my-plaintext-admin-key' } }),
    );
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/^serve\.admin\.auth\.api_keys\.0: must be `sha256:<64 hex digits>`/);
    expect(refused[0]).toContain('gatehouse admin-key hash');
    expect(refused.join('\n')).not.toContain('my-plaintext-admin-key');
    const family = problems(() =>
      loadConfig({ env: {}, overrides: { 'serve.admin.auth.api_keys': [`${hashAdminKey('k')}:clients,everything`] } }),
    );
    expect(family[0]).toMatch(/unknown family 'everything'/);
    // The families of the core (`jobs`) and of the domains (`dsync`, registered by the composition root) are known.
    const known = loadConfig({
      env: {},
      overrides: { 'serve.admin.auth.api_keys': [`${hashAdminKey('k')}:clients,jobs,dsync`] },
    });
    expect(known.serve.admin.auth.api_keys).toHaveLength(1);
    const locked = problems(() =>
      loadConfig({ env: {}, overrides: { 'serve.admin.auth.enabled': true, 'serve.admin.auth.tokens': false } }),
    );
    expect(locked[0]).toMatch(/^serve\.admin\.auth\.enabled: nothing could call the admin API/);
    const ok = loadConfig({ env: {}, overrides: { 'serve.admin.auth.api_keys': [hashAdminKey('k').toUpperCase()] } });
    expect(ok.serve.admin.auth.tokens).toBe(true);
  });
});
