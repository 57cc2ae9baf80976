/**
 * Log rules (no `audience: "audit"`, no secrets, no addresses) over real log streams: the running server's,
 * and an app built by the same factory with a test router that logs carelessly, fails, and aborts
 * an authorization request with a redirect.
 * Full and aborted authorization flows through the real endpoints: test/http/oauth2/flow-logs.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/core/errors.ts';
import { createApp, type Listening, listen } from '../../../src/core/http/apps.ts';
import { abortRedirectUrl, abortWithRedirect } from '../../../src/core/http/redirect.ts';
import { RouteTable } from '../../../src/core/http/routes.ts';
import { createLogger, sanitizeLogValue } from '../../../src/core/log.ts';
import { eventually, LogCapture, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { expectNoAuditAudienceOrAddress } from '../../helpers/log-rules.ts';

const SECRETS = {
  bearer: 'bearer-value-8c1f',
  cookie: 'cookie-value-77aa',
  apiKey: 'api-key-value-51d0',
  scim: 'scim-secret-value-3e9b',
  client: 'client-secret-value-aa12',
  dbPassword: 'db-password-value-0f0f',
  opaque: 'ory_at_Zm9vYmFyYmF6cXV4.c2lnbmF0dXJlcGFydA',
  jwt: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJl',
  code: 'auth-code-value-9d9d',
  privateD: 'jwk-private-d-value-4242',
};

function expectClean(capture: LogCapture): void {
  expect(capture.lines.length).toBeGreaterThan(0);
  for (const line of capture.lines) {
    expectNoAuditAudienceOrAddress(line);
    for (const s of Object.values(SECRETS)) expect(line, line).not.toContain(s);
  }
}

const hostileHeaders = {
  authorization: `Bearer ${SECRETS.bearer}`,
  cookie: `ory_hydra_session=${SECRETS.cookie}`,
  'x-api-key': SECRETS.apiKey,
  'x-forwarded-for': '203.0.113.7, 10.0.0.2',
  'x-real-ip': '198.51.100.9',
};

describe('log rules over the running server', () => {
  const capture = new LogCapture();
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      log: capture.logger('debug'),
      overrides: { 'clients.http.disallow_private_ip_ranges': true },
      resolver: async () => [{ address: '127.0.0.1', family: 4 }],
    });
  });
  afterAll(async () => s?.close());

  it('request logs carry no address, token, cookie or audit audience', async () => {
    // The worker's own log lines (graphile-worker through our logger) are part of the stream too.
    const worker = await s.startWorker({
      taskList: {
        gh_log_probe: async (_payload, helpers) => {
          helpers.logger.info('probe ran', { peer: '10.2.3.4', audience: 'audit' });
        },
      },
    });
    await s.container.pool.query(`SELECT graphile_worker.add_job('gh_log_probe', '{}'::json)`);
    await eventually(async () => capture.lines.some((l) => l.includes('probe ran')));
    for (const base of [s.publicUrl, s.adminUrl]) {
      await fetch(`${base}/nope?access_token=${SECRETS.opaque}&code=${SECRETS.code}`, { headers: hostileHeaders });
      await fetch(`${base}/health/alive`, { headers: hostileHeaders });
      await fetch(`${base}/version`, { headers: hostileHeaders });
      await fetch(`${base}/10.0.0.1/[::1]`, { headers: hostileHeaders });
      await fetch(`${base}/admin/clients`, {
        method: 'POST',
        headers: { ...hostileHeaders, 'content-type': 'application/json' },
        body: `{"client_secret":"${SECRETS.client}"`,
      });
    }
    await worker.stop();
    // The container's outbound clients: the OAuth2 one refuses (guard on), the dsync one does not.
    await expect(s.container.fetch.oauth2(`${s.publicUrl}/health/alive`)).rejects.toThrow(
      'outbound request to an IP-literal host refused: its address is not allowed (loopback)',
    );
    await expect(s.container.fetch.oauth2('http://idp.internal.example/jwks')).rejects.toThrow(
      'outbound request to host idp.internal.example refused',
    );
    expect((await s.container.fetch.dsync(`${s.publicUrl}/health/alive`)).json()).toEqual({ status: 'ok' });
    expect(capture.entries().filter((e) => e.code === 'blocked_address')).toHaveLength(2);
    const requests = await eventually(async () => {
      const r = capture.entries().filter((e) => e.msg === 'request completed');
      return r.length >= 8 ? r : undefined;
    });
    expect(requests.every((e) => e.level === 30 && typeof e.requestId === 'string')).toBe(true);
    expect(requests.map((e) => e.path)).toContain('/nope');
    expectClean(capture);
  });
});

describe('log rules over an app with a careless test router', () => {
  const capture = new LogCapture();
  let l: Listening;
  beforeAll(async () => {
    const table = new RouteTable();
    const r = table.group({ access: 'public', body: ['json'] });
    r.post('/careless', (ctx) => {
      ctx.state.log.info(
        {
          audience: 'audit',
          headers: ctx.headers,
          body: ctx.request.body,
          remoteAddress: ctx.req.socket.remoteAddress,
          client: {
            client_id: 'c1',
            client_secret: SECRETS.client,
            jwks: { keys: [{ kty: 'EC', d: SECRETS.privateD }] },
          },
          directory: { id: 'd1', scim: { path: '/api/scim/v2.0/d1', secret: SECRETS.scim } },
          events: [{ audience: 'audit', type: 'user.created' }],
          config: { dsn: `postgres://gh:${SECRETS.dbPassword}@db.internal:5432/gh` },
        },
        `careless: token ${SECRETS.opaque} from ${ctx.req.socket.remoteAddress} dsn postgres://gh:${SECRETS.dbPassword}@10.9.8.7/gh`,
      );
      ctx.state.log.child({ audience: 'audit', peer: '::ffff:10.1.1.1' }).warn(`jwt ${SECRETS.jwt}`);
      ctx.body = { ok: true };
    });
    r.get('/boom', () => {
      throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { address: '10.0.0.5', port: 5432 });
    });
    r.get('/authorize', (ctx) => {
      abortWithRedirect(ctx, {
        redirectUri: 'https://rp.example.com/cb',
        error: 'access_denied',
        errorDescription: 'The resource owner denied the request',
        state: 'state-1234567890',
        iss: 'https://auth.example.com/',
      });
    });
    r.get('/server-error', () => {
      throw new AppError({ status: 500, code: 'error', description: 'x' });
    });
    l = await listen(createApp({ kind: 'public', log: capture.logger('debug'), routes: table.routes }), 0, '127.0.0.1');
  });
  afterAll(async () => l?.close(1000));

  it('redacts secrets, tokens, cookies, Authorization, SCIM secrets and DSNs, strips audit audiences and addresses', async () => {
    const res = await fetch(`${l.url}/careless`, {
      method: 'POST',
      headers: { ...hostileHeaders, 'content-type': 'application/json' },
      body: JSON.stringify({ password: 'hunter2-value', refresh_token: SECRETS.opaque, audience: 'audit' }),
    });
    expect(res.status).toBe(200);
    const careless = capture.entries().find((e) => String(e.msg).startsWith('careless'))!;
    expect(careless).toBeDefined();
    // other fields unchanged
    expect((careless.client as { client_id: string }).client_id).toBe('c1');
    expect((careless.directory as { scim: { path: string } }).scim.path).toBe('/api/scim/v2.0/d1');
    expect((careless.events as unknown[])[0]).toEqual({ type: 'user.created' });
    expect((careless.headers as Record<string, string>).authorization).toBe('[redacted]');
    expect((careless.headers as Record<string, string>)['x-forwarded-for']).toBe('[address]');
    expect(careless.remoteAddress).toBe('[address]');
    expect((careless.body as { password: string }).password).toBe('[redacted]');
    expect(careless.msg).toBe('careless: token [redacted] from [address] dsn postgres://gh:[redacted]@[address]/gh');
    expect(careless).not.toHaveProperty('audience');
    const child = capture.entries().find((e) => e.level === 40 && String(e.msg).startsWith('jwt'))!;
    expect(child.msg).toBe('jwt [redacted]');
    expect(child).not.toHaveProperty('audience');
    expect(child.peer).toBe('[address]');
    expectClean(capture);
  });

  it('logs an unexpected failure at error level without the address from its message', async () => {
    const res = await fetch(`${l.url}/boom`);
    expect(res.status).toBe(500);
    const failed = capture.entries().find((e) => e.msg === 'unhandled error')!;
    expect(failed.level).toBe(50);
    expect((failed.err as { message: string }).message).toBe('connect ECONNREFUSED [address]:5432');
    expect((failed.err as { address: string }).address).toBe('[address]');
    expectClean(capture);
  });

  it('logs a redirect that aborts an authorization request below error level', async () => {
    const before = capture.lines.length;
    const res = await fetch(`${l.url}/authorize`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe('https://rp.example.com/cb');
    expect(Object.fromEntries(location.searchParams)).toEqual({
      error: 'access_denied',
      error_description: 'The resource owner denied the request',
      state: 'state-1234567890',
      iss: 'https://auth.example.com/',
    });
    expect(res.headers.get('cache-control')).toBe('no-store');
    const entries = capture.lines.slice(before).map((x) => JSON.parse(x) as Record<string, unknown>);
    expect(entries.map((e) => e.level)).toEqual([30, 30]);
    expect(entries[0]).toMatchObject({ event: 'authorization_aborted', error: 'access_denied' });
    expect(entries[1]).toMatchObject({ msg: 'request completed', status: 303 });
    expect(capture.lines.slice(before).join('\n')).not.toContain('state-1234567890');
    // the contrast: a server error is logged at error level
    await fetch(`${l.url}/server-error`);
    expect(capture.entries().some((e) => e.msg === 'request failed' && e.level === 50)).toBe(true);
  });

  it('puts error parameters in the fragment for fragment responses and drops a fragment of the redirect URI', () => {
    const u = abortRedirectUrl({
      redirectUri: 'https://rp.example.com/cb?keep=1#old',
      error: 'login_required',
      state: 's',
      responseMode: 'fragment',
    });
    expect(u).toBe('https://rp.example.com/cb?keep=1#error=login_required&state=s');
    expect(abortRedirectUrl({ redirectUri: 'https://rp.example.com/cb?keep=1', error: 'invalid_scope' })).toBe(
      'https://rp.example.com/cb?keep=1&error=invalid_scope',
    );
  });
});

describe('log sanitiser', () => {
  it('keeps other fields unchanged, including audiences that are not "audit"', () => {
    const v = { audience: 'admin', a: { audience: ['audit'] }, n: 1, t: true, z: null, s: 'plain text 26.2.0' };
    expect(sanitizeLogValue(v)).toEqual(v);
  });

  it('with log.leak_sensitive_values keeps secrets but still drops audit audiences and addresses', () => {
    const capture = new LogCapture();
    const log = createLogger({ level: 'info', destination: capture.stream as never, leakSensitiveValues: true });
    log.info({ secret: 'kept-secret', audience: 'audit', ip: '10.0.0.1' }, 'from 192.168.1.1');
    const [e] = capture.entries();
    expect(e).toMatchObject({ secret: 'kept-secret', ip: '[address]', msg: 'from [address]' });
    expect(e).not.toHaveProperty('audience');
  });

  it('lets nothing unchecked through, however deep', () => {
    let deep: Record<string, unknown> = { note: 'from 10.0.0.1', password: 'p' };
    for (let i = 0; i < 40; i++) deep = { next: deep };
    const text = JSON.stringify(sanitizeLogValue(deep));
    expect(text).not.toContain('10.0.0.1');
    expect(text).not.toContain('"p"');
  });

  it('redacts token-shaped text inside strings', () => {
    expect(sanitizeLogValue('GET /cb?code=abc&state=s&login_challenge=xyz')).toBe(
      'GET /cb?code=[redacted]&state=s&login_challenge=[redacted]',
    );
    expect(sanitizeLogValue('Authorization: Basic dXNlcjpwYXNz')).toBe('Authorization: Basic [redacted]');
    expect(sanitizeLogValue('Api-Key k-123 and Bearer abc.def')).toBe('Api-Key [redacted] and Bearer [redacted]');
    expect(sanitizeLogValue({ nested: { deeper: { webhookSecret: 'x', tokenType: 'bearer' } } })).toEqual({
      nested: { deeper: { webhookSecret: '[redacted]', tokenType: 'bearer' } },
    });
  });
});
