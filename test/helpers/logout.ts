/**
 * Logout test helpers: a remembered login that yields an ID token (through the login & consent
 * player of oauth2.ts), the logout UI's part (get + accept the challenge), and a loopback
 * back-channel receiver.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { sql } from 'kysely';
import type { TestServer } from './apps.ts';
import { adminApi, type Browser, type CreatedClient, codeFlowUrl, exchangeCode, param, runFlow } from './oauth2.ts';

/** A remembered login of `subject` for `client` (skipping the login UI when the browser has a session). */
export async function rememberedLogin(
  t: TestServer,
  browser: Browser,
  client: CreatedClient,
  subject = 'alice',
): Promise<{ idToken: string; sid: string; loginSkipped: boolean }> {
  const r = await runFlow(t, browser, codeFlowUrl(t, client, 'openid'), {
    login: (q) => ({ subject: q.skip ? q.subject : subject, remember: true }),
  });
  const tok = await exchangeCode(t, client, param(r.final, 'code') as string);
  if (tok.status !== 200) throw new Error(`token: ${tok.status} ${JSON.stringify(tok.body)}`);
  const idToken = tok.body.id_token as string;
  const sid = JSON.parse(Buffer.from(idToken.split('.')[1] as string, 'base64url').toString()).sid as string;
  return { idToken, sid, loginSkipped: !!r.loginSeen?.skip };
}

/** The logout UI: reads the challenge from `location`, accepts it, and follows `redirect_to` in the browser. */
export async function acceptLogout(t: TestServer, browser: Browser, location: string) {
  const challenge = param(location, 'logout_challenge');
  if (!challenge) throw new Error(`no logout challenge in ${location}`);
  const { data } = await adminApi(t).acceptOAuth2LogoutRequest({ logoutChallenge: challenge });
  const done = await browser.get(data.redirect_to);
  return { challenge, redirectTo: data.redirect_to, ...done };
}

export const sessionCount = async (t: TestServer, where: { sid?: string; subject?: string }) => {
  const q = t.container.db.selectFrom('oauth2_login_sessions').select((eb) => eb.fn.countAll<number>().as('n'));
  const r = await (where.sid
    ? q.where('id', '=', where.sid)
    : q.where('subject', '=', where.subject ?? '')
  ).executeTakeFirstOrThrow();
  return Number(r.n);
};

export interface BackchannelJob {
  id: number;
  sid: string;
  clientId: string;
  attempts: number;
  lastError: string | null;
}

export async function backchannelJobs(t: TestServer): Promise<BackchannelJob[]> {
  const { rows } = await sql<{
    id: string;
    payload: { sid: string; clientId: string };
    attempts: number;
    last_error: string | null;
  }>`
    select j.id, j.payload, j.attempts, j.last_error from graphile_worker._private_jobs j
    join graphile_worker._private_tasks k on k.id = j.task_id
    where k.identifier = 'oauth2_backchannel_logout' order by j.id`.execute(t.container.db);
  return rows.map((r) => ({
    id: Number(r.id),
    sid: r.payload.sid,
    clientId: r.payload.clientId,
    attempts: r.attempts,
    lastError: r.last_error,
  }));
}

export interface Received {
  path: string;
  contentType: string;
  body: URLSearchParams;
}

/** A loopback HTTP server that records POSTs and answers with `status()` (200 by default). */
export async function startReceiver(status: (req: IncomingMessage) => number = () => 200) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'] ?? '',
        body: new URLSearchParams(raw),
      });
      res.writeHead(status(req)).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
