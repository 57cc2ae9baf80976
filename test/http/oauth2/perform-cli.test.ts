import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, LogCapture, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { performUntil } from '../../helpers/cli.ts';
import { authorizeUrl, Browser, createClient, param, randomState, runFlow } from '../../helpers/oauth2.ts';

let t: TestServer;
const logs = new LogCapture();

beforeAll(async () => {
  t = await startTestServer({ log: logs.logger('debug') });
});
afterAll(() => t?.close());

describe('gatehouse perform authorization-code', () => {
  it('prints the authorization URL, receives the callback on loopback and prints the tokens', async () => {
    const port = await freePort();
    const client = await createClient(t, { redirect_uris: [`http://127.0.0.1:${port}/callback`] });
    const cli = await performUntil(
      ['authorization-code', '--endpoint', t.publicUrl, '--port', String(port), '--format', 'json'],
      client,
      /(http:\/\/\S+\/oauth2\/auth\?\S+)/,
      20_000,
    );
    try {
      const url = cli.match;
      expect(param(url, 'code_challenge_method')).toBe('S256');
      expect(param(url, 'scope')).toBe('offline openid');
      const r = await runFlow(t, new Browser(), url);
      expect(r.final.startsWith(`http://127.0.0.1:${port}/callback?`)).toBe(true);
      const cb = await fetch(r.final);
      expect(cb.status).toBe(200);
      expect(await cli.exited).toBe(0);
      const tokens = JSON.parse(cli.stdout().slice(cli.stdout().indexOf('{')));
      expect(tokens.access_token).toMatch(/^ory_at_/);
      expect(tokens.refresh_token).toMatch(/^ory_rt_/);
      expect(tokens.id_token.split('.')).toHaveLength(3);
    } finally {
      cli.stop();
    }
  });

  it('logs a request aborted by a redirect at info level, never as an error', async () => {
    const client = await createClient(t);
    const before = logs.entries().length;
    const step = await new Browser().get(
      authorizeUrl(t, {
        client_id: client.client_id,
        response_type: 'code',
        redirect_uri: 'http://127.0.0.1:9999/cb',
        scope: 'openid',
        state: randomState(),
        prompt: 'none',
      }),
    );
    expect(param(step.location, 'error')).toBe('login_required');
    const entries = logs.entries().slice(before);
    expect(entries.some((e) => e.msg === 'authorization request aborted with a redirect' && e.level === 30)).toBe(true);
    expect(entries.filter((e) => (e.level as number) >= 50)).toEqual([]);
  });
});
