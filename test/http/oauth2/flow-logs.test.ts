import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LogCapture, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { expectNoAuditAudienceOrAddress } from '../../helpers/log-rules.ts';
import {
  authorizeUrl,
  Browser,
  type CreatedClient,
  createClient,
  exchangeCode,
  param,
  randomState,
  runFlow,
} from '../../helpers/oauth2.ts';

/**
 * Seed behaviour 14 and the log rules over the real log stream of full authorization flows and
 * aborted ones: no `audience: "audit"`, no addresses, no tokens, codes, challenges or secrets, and
 * nothing at error level for redirects that abort a request.
 */
describe('log rules over real authorization flows', () => {
  const capture = new LogCapture();
  let s: TestServer;
  let client: CreatedClient;
  const secrets: string[] = [];
  beforeAll(async () => {
    s = await startTestServer({ log: capture.logger('debug') });
    client = await createClient(s, { scope: 'openid offline offline_access profile' });
    secrets.push(client.client_secret as string);
  });
  afterAll(async () => s?.close());

  const url = (extra: Record<string, string> = {}) =>
    authorizeUrl(s, {
      client_id: client.client_id,
      response_type: 'code',
      scope: 'openid offline_access',
      state: randomState(),
      redirect_uri: 'http://127.0.0.1:9999/cb',
      ...extra,
    });

  it('logs a full flow and aborted flows without secrets, addresses, audit audiences or error-level redirects', async () => {
    // 1. a successful flow: code, tokens, userinfo
    const ok = await runFlow(s, new Browser(), url(), {
      login: (q) => {
        secrets.push(q.challenge);
        return { subject: 'log-alice' };
      },
      consent: (q) => {
        secrets.push(q.challenge);
        return { grant_scope: q.requested_scope };
      },
    });
    secrets.push(param(ok.loginVerifierUrl as string, 'login_verifier') as string);
    secrets.push(param(ok.consentVerifierUrl as string, 'consent_verifier') as string);
    const code = param(ok.final, 'code') as string;
    secrets.push(code);
    const tokens = await exchangeCode(s, client, code);
    expect(tokens.status).toBe(200);
    for (const k of ['access_token', 'refresh_token', 'id_token']) secrets.push(tokens.body[k] as string);
    const ui = await fetch(`${s.publicUrl}/userinfo`, {
      headers: { authorization: `Bearer ${tokens.body.access_token}` },
    });
    expect(ui.status).toBe(200);
    // a replayed code (an error response, not a redirect)
    expect((await exchangeCode(s, client, code)).status).toBe(400);

    // 2. aborted flows: denied login, denied consent, disallowed scope, unknown client
    const deniedLogin = await runFlow(s, new Browser(), url(), { login: () => false });
    expect(param(deniedLogin.final, 'error')).toBe('access_denied');
    const deniedConsent = await runFlow(s, new Browser(), url(), { consent: () => false });
    expect(param(deniedConsent.final, 'error')).toBe('access_denied');
    const badScope = await new Browser().get(url({ scope: 'openid not-allowed-scope' }));
    expect(param(badScope.location, 'error')).toBe('invalid_scope');
    const unknown = await new Browser().get(
      authorizeUrl(s, { client_id: 'no-such-client', response_type: 'code', state: randomState() }),
    );
    expect(unknown.location).toContain('/oauth2/fallbacks/error');

    const entries = capture.entries();
    expect(entries.length).toBeGreaterThan(10);
    // aborting redirects are logged, below error level
    const errors = entries.filter((e) => (e.level as number) >= 50);
    expect(errors).toEqual([]);
    for (const line of capture.lines) {
      expectNoAuditAudienceOrAddress(line);
      for (const secret of secrets) expect(line.includes(secret), `log line leaks a secret: ${line}`).toBe(false);
    }
  });
});
