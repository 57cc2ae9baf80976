import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';
import {
  adminApi,
  authorizeUrl,
  Browser,
  type CreatedClient,
  createClient,
  param,
  randomState,
  runFlow,
} from '../../helpers/oauth2.ts';

/** `gatehouse debug challenge` and `debug encrypted-session` on values produced by a running server. */
describe('debug commands', () => {
  let s: TestServer;
  let client: CreatedClient;
  let env: Record<string, string>;
  beforeAll(async () => {
    s = await startTestServer();
    client = await createClient(s, { scope: 'openid offline profile' });
    env = { DSN: s.database.url, SECRETS_SYSTEM: TEST_SECRET };
  });
  afterAll(async () => s?.close());

  const decode = async (value: string, e = env) => {
    const r = await runCli(['debug', 'challenge', value], e);
    return { ...r, json: r.code === 0 ? JSON.parse(r.stdout) : undefined };
  };
  const start = () =>
    new Browser().get(
      authorizeUrl(s, {
        client_id: client.client_id,
        response_type: 'code',
        scope: 'openid profile',
        state: randomState(),
        redirect_uri: 'http://127.0.0.1:9999/cb',
      }),
    );

  it('decodes login and consent challenges and verifiers into the flow they carry', async () => {
    const browser = new Browser();
    const seen: Record<string, string> = {};
    await runFlow(
      s,
      browser,
      authorizeUrl(s, {
        client_id: client.client_id,
        response_type: 'code',
        scope: 'openid profile',
        state: randomState(),
        redirect_uri: 'http://127.0.0.1:9999/cb',
      }),
      {
        login: (q) => {
          seen.login_challenge = q.challenge;
          return { subject: 'debug-alice', remember: false };
        },
        consent: (q) => {
          seen.consent_challenge = q.challenge;
          return { grant_scope: q.requested_scope };
        },
      },
    ).then((r) => {
      seen.login_verifier = param(r.loginVerifierUrl as string, 'login_verifier') as string;
      seen.consent_verifier = param(r.consentVerifierUrl as string, 'consent_verifier') as string;
    });
    const login = await decode(seen.login_challenge as string);
    expect(login.code).toBe(0);
    expect(login.json.kind).toBe('login_challenge');
    expect(login.json.expired).toBe(false);
    expect(login.json.flow.clientId).toBe(client.client_id);
    expect(login.json.flow.requestedScope).toEqual(['openid', 'profile']);
    const lv = await decode(seen.login_verifier as string);
    expect(lv.json.kind).toBe('login_verifier');
    expect(lv.json.flow.subject).toBe('debug-alice');
    const cc = await decode(seen.consent_challenge as string);
    expect(cc.json.kind).toBe('consent_challenge');
    expect(cc.json.flow.subject).toBe('debug-alice');
    const cv = await decode(seen.consent_verifier as string);
    expect(cv.json.kind).toBe('consent_verifier');
    expect(cv.json.flow.consent.grantScope).toEqual(['openid', 'profile']);
  });

  it('decodes with any rotation entry of secrets.system', async () => {
    const challenge = param((await start()).location, 'login_challenge') as string;
    const r = await decode(challenge, { ...env, SECRETS_SYSTEM: `a-newer-system-secret-0000,${TEST_SECRET}` });
    expect(r.code).toBe(0);
    expect(r.json.kind).toBe('login_challenge');
  });

  it('refuses a tampered or foreign value with one line and exit 1, no stack trace', async () => {
    const challenge = param((await start()).location, 'login_challenge') as string;
    const tampered = `${challenge.slice(0, -6)}${challenge.slice(-6) === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA'}`;
    for (const [value, e] of [
      [tampered, env],
      [challenge, { ...env, SECRETS_SYSTEM: 'some-other-system-secret-000' }],
      ['not-a-challenge', env],
    ] as const) {
      const r = await decode(value, e);
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^error: not a gatehouse challenge or verifier/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('decrypts the encrypted session data kept in the database', async () => {
    const browser = new Browser();
    await runFlow(
      s,
      browser,
      authorizeUrl(s, {
        client_id: client.client_id,
        response_type: 'code',
        scope: 'openid profile',
        state: randomState(),
        redirect_uri: 'http://127.0.0.1:9999/cb',
      }),
      { consent: (q) => ({ grant_scope: q.requested_scope, session: { id_token: { marker: 'debug-claim-42' } } }) },
    );
    const { rows } = await sql<{
      session_data: string;
    }>`select session_data from oauth2_flows order by requested_at desc limit 1`.execute(s.container.db);
    const stored = rows[0]?.session_data as string;
    expect(stored).not.toContain('debug-claim-42'); // sealed at rest
    const r = await runCli(['debug', 'encrypted-session', stored], env);
    expect(r.code).toBe(0);
    expect(JSON.stringify(JSON.parse(r.stdout))).toContain('debug-claim-42');
    const bad = await runCli(['debug', 'encrypted-session', `${stored.slice(0, -4)}AAAA`], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: not gatehouse session data/);
    // the admin API agrees on the claims (the consent session lists them)
    const sessions = await adminApi(s).listOAuth2ConsentSessions({ subject: 'alice' });
    expect(JSON.stringify(sessions.data)).toContain('debug-claim-42');
  });
});
