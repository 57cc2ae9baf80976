/**
 * How the token endpoint stores what a grant plans (src/oauth2/store/token-plan.ts), statement by
 * statement, without and with audit rows:
 *
 * - without: a client_credentials token is one insert outside any transaction (group commit), with
 *   a DPoP proof one statement that records the proof's jti and inserts the token; a device
 *   grant's final poll spends the device request and inserts its tokens in one statement;
 * - with: the audit row commits in one transaction with the tokens, and the spent code or device
 *   request and its tokens are still one statement inside it;
 * - a refresh rotation is one READ COMMITTED transaction either way, the new pair one insert.
 *
 * Counted by wrapping `pg.Client#query` of this test process (the server runs in it), leaving out
 * what flow-statements.test.ts leaves out and the failed-authentication check. Each part starts its
 * own server: `audit.enabled` is set when a server is built.
 */
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  adminApi,
  Browser,
  type CreatedClient,
  codeFlowUrl,
  createClient,
  exchangeCode,
  param,
  runFlow,
} from '../../helpers/oauth2.ts';
import { basic, refresh, tokenRequest } from '../../helpers/tokens.ts';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const IGNORED =
  /graphile_worker|^(un)?listen\b|^select \* from "oauth2_clients" where|^select .* from "jwk_keys" where|^select pg_backend_pid\(\)|^set |\bauth_failures\b/i;

let recording: string[] | undefined;
const query = pg.Client.prototype.query;
beforeAll(() => {
  pg.Client.prototype.query = function recorded(this: pg.Client, ...args: unknown[]) {
    const q = args[0] as string | { text?: string } | undefined;
    const text = (typeof q === 'string' ? q : (q?.text ?? '')).replace(/\s+/g, ' ').trim();
    if (recording && !IGNORED.test(text)) recording.push(text);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
});
afterAll(() => {
  pg.Client.prototype.query = query;
});

async function statementsOf<T>(step: () => Promise<T>): Promise<{ result: T; sql: string[] }> {
  recording = [];
  try {
    const result = await step();
    return { result, sql: recording };
  } finally {
    recording = undefined;
  }
}

/** Short names: the statement's kind and the tables it names, in order. */
const shape = (sql: string[]) =>
  sql.map((s) => {
    if (/^(begin|commit|start transaction)\b/i.test(s)) return s.split(' ')[0]?.toLowerCase();
    const tables = [...s.matchAll(/\b(?:into|from|update)\s+"?((?:oauth2|audit)_\w+)"?/gi)].map((m) => m[1]);
    return `${s.split(' ')[0]?.toLowerCase()} ${[...new Set(tables)].join(',')}`;
  });

interface Clients {
  machine: CreatedClient;
  user: CreatedClient;
  device: CreatedClient;
}

async function setUp(t: TestServer): Promise<Clients> {
  const machine = await createClient(t, { grant_types: ['client_credentials'], response_types: [], scope: 'a' });
  const user = await createClient(t, { scope: 'openid offline' });
  const device = await createClient(t, {
    grant_types: [DEVICE, 'refresh_token'],
    response_types: ['code'],
    scope: 'openid offline',
  });
  // The signing keys are created on first use, which is not a token request's cost.
  const first = await runFlow(t, new Browser(), codeFlowUrl(t, user, 'openid offline'));
  expect((await exchangeCode(t, user, param(first.final, 'code') as string)).status).toBe(200);
  expect((await tokenRequest(t, machine, { grant_type: 'client_credentials' })).status).toBe(200);
  return { machine, user, device };
}

/** A device code whose user has logged in and consented, ready for its final poll. */
async function approvedDeviceCode(t: TestServer, client: CreatedClient): Promise<string> {
  const r = await fetch(`${t.publicUrl}/oauth2/device/auth`, {
    method: 'POST',
    headers: { authorization: basic(client), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: client.client_id, scope: 'openid offline' }),
  });
  expect(r.status).toBe(200);
  const auth = (await r.json()) as { device_code: string; user_code: string };
  const browser = new Browser();
  const start = await browser.get(`${t.publicUrl}/oauth2/device/verify`);
  const accepted = await adminApi(t).acceptUserCodeRequest({
    deviceChallenge: param(start.location, 'device_challenge') as string,
    acceptDeviceUserCodeRequest: { user_code: auth.user_code },
  });
  await runFlow(t, browser, accepted.data.redirect_to);
  return auth.device_code;
}

/** A fresh DPoP proof (RFC 9449) for the token endpoint of `t`, of a new ES256 key. */
async function dpopProof(t: TestServer): Promise<string> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return new SignJWT({
    jti: randomUUID(),
    htm: 'POST',
    htu: `${t.publicUrl}/oauth2/token`,
    iat: Math.floor(Date.now() / 1000),
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(publicKey) })
    .sign(privateKey);
}

/** The poll's own transaction (lock, poll time) and the read of the request, before any token write. */
const POLL = [
  'begin',
  'select oauth2_device_requests',
  'update oauth2_device_requests',
  'commit',
  'select oauth2_device_requests',
];
const ROTATE = [
  'start',
  'select oauth2_refresh_tokens',
  'update oauth2_refresh_tokens',
  'delete oauth2_access_tokens',
  'update oauth2_refresh_tokens',
  'with oauth2_access_tokens,oauth2_refresh_tokens',
];

describe('without audit rows', () => {
  let t: TestServer;
  let c: Clients;
  beforeAll(async () => {
    t = await startTestServer({ overrides: { 'audit.enabled': false } });
    c = await setUp(t);
  });
  afterAll(() => t?.close());

  it('stores a client_credentials token with one insert, outside a transaction', async () => {
    const r = await statementsOf(() => tokenRequest(t, c.machine, { grant_type: 'client_credentials' }));
    expect(r.result.status).toBe(200);
    expect(shape(r.sql)).toEqual(['insert oauth2_access_tokens']);
  });

  it("stores a client_credentials token with its DPoP proof's jti in one statement", async () => {
    const proof = await dpopProof(t);
    const r = await statementsOf(() =>
      tokenRequest(t, c.machine, { grant_type: 'client_credentials' }, { dpop: proof }),
    );
    expect(r.result.status).toBe(200);
    expect(r.result.body.token_type).toBe('DPoP');
    expect(shape(r.sql)).toEqual(['with oauth2_jti_blacklist,oauth2_access_tokens']);
  });

  it('spends a code or a device request and stores its tokens in one statement', async () => {
    const flow = await runFlow(t, new Browser(), codeFlowUrl(t, c.user, 'openid offline'));
    const code = await statementsOf(() => exchangeCode(t, c.user, param(flow.final, 'code') as string));
    expect(code.result.status).toBe(200);
    expect(shape(code.sql)).toEqual([
      'select oauth2_authorization_codes',
      'with oauth2_authorization_codes,oauth2_access_tokens,oauth2_refresh_tokens',
    ]);

    const deviceCode = await approvedDeviceCode(t, c.device);
    const poll = await statementsOf(() => tokenRequest(t, c.device, { grant_type: DEVICE, device_code: deviceCode }));
    expect(poll.result.status).toBe(200);
    expect(shape(poll.sql)).toEqual([
      ...POLL,
      'with oauth2_device_requests,oauth2_access_tokens,oauth2_refresh_tokens',
    ]);
  });

  it('rotates a refresh token in one transaction, the new pair in one insert', async () => {
    const flow = await runFlow(t, new Browser(), codeFlowUrl(t, c.user, 'openid offline'));
    const tokens = await exchangeCode(t, c.user, param(flow.final, 'code') as string);
    const r = await statementsOf(() => refresh(t, c.user, tokens.body.refresh_token as string));
    expect(r.result.status).toBe(200);
    expect(shape(r.sql)).toEqual(['select oauth2_refresh_tokens', ...ROTATE, 'commit']);
  });
});

describe('with audit rows', () => {
  let t: TestServer;
  let c: Clients;
  beforeAll(async () => {
    t = await startTestServer({ overrides: { 'audit.enabled': true } });
    c = await setUp(t);
  });
  afterAll(() => t?.close());

  it('commits the audit row with the client_credentials token', async () => {
    const r = await statementsOf(() => tokenRequest(t, c.machine, { grant_type: 'client_credentials' }));
    expect(r.result.status).toBe(200);
    expect(shape(r.sql)).toEqual(['begin', 'insert oauth2_access_tokens', 'insert audit_events', 'commit']);
  });

  it("records a DPoP proof's jti before the transaction of the client_credentials token", async () => {
    const proof = await dpopProof(t);
    const r = await statementsOf(() =>
      tokenRequest(t, c.machine, { grant_type: 'client_credentials' }, { dpop: proof }),
    );
    expect(r.result.status).toBe(200);
    expect(shape(r.sql)).toEqual([
      'insert oauth2_jti_blacklist',
      'begin',
      'insert oauth2_access_tokens',
      'insert audit_events',
      'commit',
    ]);
  });

  it('spends a code or a device request in one statement within the transaction of the audit row', async () => {
    const flow = await runFlow(t, new Browser(), codeFlowUrl(t, c.user, 'openid offline'));
    const code = await statementsOf(() => exchangeCode(t, c.user, param(flow.final, 'code') as string));
    expect(code.result.status).toBe(200);
    expect(shape(code.sql)).toEqual([
      'select oauth2_authorization_codes',
      'begin',
      'with oauth2_authorization_codes,oauth2_access_tokens,oauth2_refresh_tokens',
      'insert audit_events',
      'commit',
    ]);

    const deviceCode = await approvedDeviceCode(t, c.device);
    const poll = await statementsOf(() => tokenRequest(t, c.device, { grant_type: DEVICE, device_code: deviceCode }));
    expect(poll.result.status).toBe(200);
    expect(shape(poll.sql)).toEqual([
      ...POLL,
      'begin',
      'with oauth2_device_requests,oauth2_access_tokens,oauth2_refresh_tokens',
      'insert audit_events',
      'commit',
    ]);
  });

  it('records the rotation in its transaction', async () => {
    const flow = await runFlow(t, new Browser(), codeFlowUrl(t, c.user, 'openid offline'));
    const tokens = await exchangeCode(t, c.user, param(flow.final, 'code') as string);
    const r = await statementsOf(() => refresh(t, c.user, tokens.body.refresh_token as string));
    expect(r.result.status).toBe(200);
    expect(shape(r.sql)).toEqual(['select oauth2_refresh_tokens', ...ROTATE, 'insert audit_events', 'commit']);
  });
});
