/**
 * The SQL the authorization-code flow sends, step by step (docs/performance.md lists each statement
 * and why it is needed): the login re-entry and the consent re-entry are one statement each, the
 * code exchange reads the code and writes with one more — no transaction anywhere. Counted by
 * wrapping `pg.Client#query` of this test process (the server runs in it). Left out: the worker's
 * and LISTEN traffic, a new pooled connection's set-up, and the reads of the client and of the
 * signing keys (both come from memory while the change feed is live, which this test does not
 * wait for).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  Browser,
  CB,
  type CreatedClient,
  codeFlowUrl,
  createClient,
  exchangeCode,
  param,
  pkcePair,
  runFlow,
} from '../../helpers/oauth2.ts';

let t: TestServer;
let client: CreatedClient;
let recording: string[] | undefined;
const query = pg.Client.prototype.query;

beforeAll(async () => {
  pg.Client.prototype.query = function recorded(this: pg.Client, ...args: unknown[]) {
    const q = args[0] as string | { text?: string } | undefined;
    const text = (typeof q === 'string' ? q : (q?.text ?? '')).replace(/\s+/g, ' ').trim();
    if (
      recording &&
      !/graphile_worker|^(un)?listen\b|^select \* from "oauth2_clients" where|^select .* from "jwk_keys" where|^select pg_backend_pid\(\)|^set /i.test(
        text,
      )
    )
      recording.push(text);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  t = await startTestServer();
  client = await createClient(t, { scope: 'openid offline' });
});
afterAll(async () => {
  pg.Client.prototype.query = query;
  await t?.close();
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

const admin = async (path: string, body: unknown) => {
  const r = await fetch(`${t.adminUrl}${path}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { redirect_to: string }).redirect_to;
};

describe('the authorization-code flow, statement by statement', () => {
  it('sends one statement per re-entry and two (plus the failed-authentication check) for the code exchange', async () => {
    // One flow first: the signing keys are created on first use, which is not the flow's cost.
    const first = await runFlow(t, new Browser(), codeFlowUrl(t, client, 'openid offline'));
    expect((await exchangeCode(t, client, param(first.final, 'code') as string)).status).toBe(200);

    const b = new Browser();
    const { verifier, challenge } = pkcePair();
    const start = await statementsOf(() =>
      b.get(
        codeFlowUrl(t, client, 'openid offline', {
          nonce: 'n-0123456789',
          code_challenge: challenge,
          code_challenge_method: 'S256',
        }),
      ),
    );
    // Challenges are sealed: nothing to read or write yet.
    expect(start.sql).toEqual([]);
    const loginChallenge = param(start.result.location, 'login_challenge') as string;

    const accepted = await statementsOf(() =>
      admin(`/admin/oauth2/auth/requests/login/accept?login_challenge=${encodeURIComponent(loginChallenge)}`, {
        subject: 'alice',
      }),
    );
    expect(accepted.sql).toEqual([]);

    const login = await statementsOf(() => b.get(accepted.result));
    expect(login.result.status).toBe(302);
    expect(login.sql).toHaveLength(1);
    expect(login.sql[0]).toMatch(/oauth2_used_verifiers.*oauth2_login_sessions.*oauth2_flows/);
    const consentChallenge = param(login.result.location, 'consent_challenge') as string;

    const consentAccepted = await statementsOf(() =>
      admin(`/admin/oauth2/auth/requests/consent/accept?consent_challenge=${encodeURIComponent(consentChallenge)}`, {
        grant_scope: ['openid', 'offline'],
      }),
    );
    expect(consentAccepted.sql).toEqual([]);

    const consent = await statementsOf(() => b.get(consentAccepted.result));
    expect(consent.result.status).toBe(303);
    expect(consent.result.location.startsWith(CB)).toBe(true);
    expect(consent.sql).toHaveLength(1);
    expect(consent.sql[0]).toMatch(/oauth2_used_verifiers.*oauth2_flows.*oauth2_authorization_codes/);

    const code = param(consent.result.location, 'code') as string;
    const exchange = await statementsOf(() => exchangeCode(t, client, code, { code_verifier: verifier }));
    expect(exchange.result.status).toBe(200);
    expect(exchange.result.body).toMatchObject({ token_type: 'bearer', scope: 'openid offline' });
    const own = exchange.sql.filter((s) => !/\bauth_failures\b/.test(s));
    expect(own).toHaveLength(2);
    expect(own[0]).toMatch(/^select .* from "oauth2_authorization_codes"/);
    expect(own[1]).toMatch(/update oauth2_authorization_codes.*oauth2_access_tokens.*oauth2_refresh_tokens/);
    expect(
      [...start.sql, ...login.sql, ...consent.sql, ...exchange.sql].filter((s) => /^(begin|commit)\b/i.test(s)),
    ).toEqual([]);

    // The code is one-time: a second exchange fails and writes no token.
    const again = await exchangeCode(t, client, code, { code_verifier: verifier });
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ error: 'invalid_grant' });
  });
});
