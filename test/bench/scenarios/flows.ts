/**
 * The whole authorization-code flow, headless, as a login and consent app drives gatehouse: each
 * unit of work is one flow of a fresh browser (no session, no remembered consent) —
 *
 *   GET /oauth2/auth (PKCE S256)  → 302 to the login app with login_challenge
 *   PUT …/requests/login/accept   (admin API: the login app accepts the subject)
 *   GET /oauth2/auth?login_verifier=…  → 302 to the consent app with consent_challenge
 *   PUT …/requests/consent/accept (admin API: grant `openid offline`)
 *   GET /oauth2/auth?consent_verifier=… → 303 to the client's redirect URI with the code (the callback)
 *   POST /oauth2/token            (client_secret_basic, code + verifier → access, refresh and ID token)
 *
 * Reported per flow: flows/s, p50/p99 of a whole flow, SQL statements per flow. Concurrency 20.
 * A second scenario pushes each request first (POST /oauth2/par, RFC 9126; the peer's `/request`)
 * and starts the flow with `client_id` and the `request_uri` only.
 *
 * Beside it, as context only (no peer runs the same headless challenge model): node-oidc-provider's
 * own flow — GET /auth → its interaction → login and consent results stored straight into the
 * interaction by a bench-only route of the peer (test/bench/peers/oidc-provider.mjs, the equivalent
 * of the accept calls) → resume → callback with the code → POST /token. In memory: it stores nothing.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Proc } from '../proc.ts';
import type { DriveResult, Scenario, Side } from '../types.ts';

const CB = 'http://127.0.0.1:9/cb';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_H = { 'content-type': 'application/json' };
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

/** A browser's cookie jar for one flow; requests never follow redirects. */
class Jar {
  private readonly c = new Map<string, string>();
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        ...(init.headers as Record<string, string>),
        cookie: [...this.c].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    for (const sc of res.headers.getSetCookie()) {
      const pair = sc.split(';')[0] as string;
      const eq = pair.indexOf('=');
      const v = pair.slice(eq + 1).trim();
      if (v) this.c.set(pair.slice(0, eq).trim(), v);
      else this.c.delete(pair.slice(0, eq).trim());
    }
    return res;
  }
}

export class FlowError extends Error {}

async function expectRedirect(res: Response, step: string): Promise<string> {
  const loc = res.headers.get('location');
  if ((res.status !== 302 && res.status !== 303) || !loc)
    throw new FlowError(`${step} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  await res.body?.cancel();
  return loc;
}

/** The same path on the process's listener (redirect_to carries the configured public URL, not the bench's port). */
const on = (base: string, url: string) => {
  const u = new URL(url, base);
  const b = new URL(base);
  u.protocol = b.protocol;
  u.host = b.host;
  return u.toString();
};

const param = (url: string, name: string) => new URL(url, 'http://x').searchParams.get(name);

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Runs `connections` loops of `flow` for `seconds` (at least one flow each). */
export async function loops(connections: number, seconds: number, flow: () => Promise<unknown>): Promise<DriveResult> {
  const started = performance.now();
  const until = started + seconds * 1000;
  const latencies: number[] = [];
  let errors = 0;
  let firstError: unknown;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      do {
        const t0 = performance.now();
        try {
          await flow();
          latencies.push(performance.now() - t0);
        } catch (e) {
          errors++;
          firstError ??= e;
        }
      } while (performance.now() < until && errors < 50);
    }),
  );
  if (firstError)
    process.stderr.write(`flow error: ${firstError instanceof Error ? firstError.message : firstError}\n`);
  return { units: latencies.length, errors, latencies, elapsedMs: performance.now() - started };
}

export interface GhClient {
  client_id: string;
  client_secret: string;
}

/**
 * The authorization URL of a flow: the parameters in the query, or — `par` — pushed first to the
 * server's PAR endpoint (RFC 9126) with the client's credentials, the URL then carrying only
 * `client_id` and the `request_uri` it answered.
 */
async function authorizationUrl(
  endpoints: { auth: string; par: string },
  client: GhClient,
  params: Record<string, string>,
  par: boolean,
): Promise<string> {
  const all = { client_id: client.client_id, ...params };
  const url = new URL(endpoints.auth);
  if (!par) {
    url.search = new URLSearchParams(all).toString();
    return url.toString();
  }
  const pushed = await fetch(endpoints.par, {
    method: 'POST',
    headers: { ...FORM, authorization: basic(client.client_id, client.client_secret) },
    body: new URLSearchParams(all),
  });
  const body = (await pushed.json()) as { request_uri?: string };
  if (pushed.status !== 201 || !body.request_uri)
    throw new FlowError(`PAR answered ${pushed.status}: ${JSON.stringify(body).slice(0, 300)}`);
  url.search = new URLSearchParams({ client_id: client.client_id, request_uri: body.request_uri }).toString();
  return url.toString();
}

/**
 * One whole flow of a fresh browser with client `c` (through PAR when `par`); throws on any
 * unexpected answer. Returns the token response (access, refresh and ID token).
 */
export async function ghFlow(p: Proc, c: GhClient, par = false): Promise<Record<string, unknown>> {
  const b = new Jar();
  const { verifier, challenge } = pkce();
  const auth = await authorizationUrl(
    { auth: `${p.url}/oauth2/auth`, par: `${p.url}/oauth2/par` },
    c,
    {
      response_type: 'code',
      redirect_uri: CB,
      scope: 'openid offline',
      state: randomBytes(12).toString('hex'),
      nonce: randomBytes(12).toString('hex'),
      code_challenge: challenge,
      code_challenge_method: 'S256',
    },
    par,
  );
  const toLogin = await expectRedirect(await b.fetch(auth), 'authorize');
  const loginChallenge = param(toLogin, 'login_challenge');
  if (!loginChallenge) throw new FlowError(`authorize did not go to the login app: ${toLogin}`);
  const la = await fetch(
    `${p.adminUrl}/admin/oauth2/auth/requests/login/accept?login_challenge=${encodeURIComponent(loginChallenge)}`,
    { method: 'PUT', headers: JSON_H, body: JSON.stringify({ subject: 'bench-user' }) },
  );
  if (la.status !== 200) throw new FlowError(`login accept answered ${la.status}: ${await la.text()}`);
  const loginVerifier = ((await la.json()) as { redirect_to: string }).redirect_to;
  const toConsent = await expectRedirect(await b.fetch(on(p.url, loginVerifier)), 'authorize (login verifier)');
  const consentChallenge = param(toConsent, 'consent_challenge');
  if (!consentChallenge) throw new FlowError(`login verifier did not go to the consent app: ${toConsent}`);
  const ca = await fetch(
    `${p.adminUrl}/admin/oauth2/auth/requests/consent/accept?consent_challenge=${encodeURIComponent(consentChallenge)}`,
    {
      method: 'PUT',
      headers: JSON_H,
      body: JSON.stringify({ grant_scope: ['openid', 'offline'], session: { id_token: { name: 'Bench' } } }),
    },
  );
  if (ca.status !== 200) throw new FlowError(`consent accept answered ${ca.status}: ${await ca.text()}`);
  const consentVerifier = ((await ca.json()) as { redirect_to: string }).redirect_to;
  const callback = await expectRedirect(await b.fetch(on(p.url, consentVerifier)), 'authorize (consent verifier)');
  const code = param(callback, 'code');
  if (!callback.startsWith(CB) || !code) throw new FlowError(`the flow ended at ${callback}`);
  const tok = await fetch(`${p.url}/oauth2/token`, {
    method: 'POST',
    headers: { ...FORM, authorization: basic(c.client_id, c.client_secret) },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CB, code_verifier: verifier }),
  });
  const body = (await tok.json()) as Record<string, unknown>;
  if (tok.status !== 200 || !body.access_token || !body.refresh_token || !body.id_token)
    throw new FlowError(`code exchange answered ${tok.status}: ${JSON.stringify(body).slice(0, 300)}`);
  return body;
}

/**
 * A confidential client of the flow (through the admin API): `authorization_code` and
 * `refresh_token`, the bench's redirect URI, `openid offline` (`extra` adds to or replaces fields).
 */
export async function codeClient(p: Proc, extra: Record<string, unknown> = {}): Promise<GhClient> {
  const r = await fetch(`${p.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: JSON_H,
    body: JSON.stringify({
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [CB],
      scope: 'openid offline',
      token_endpoint_auth_method: 'client_secret_basic',
      ...extra,
    }),
  });
  if (r.status !== 201) throw new Error(`client create answered ${r.status}: ${await r.text()}`);
  return (await r.json()) as GhClient;
}

/** gatehouse's side of the flow scenarios: whole flows from `connections` loops (`drive`). */
export const gatehouseSide = (par: boolean): Side => {
  let client: GhClient | undefined;
  return {
    url: (p) => p.url,
    async setup(p) {
      client = await codeClient(p);
      await ghFlow(p, client, par);
      return [];
    },
    drive: (p, o) => loops(o.connections, o.seconds, () => ghFlow(p, client as GhClient, par)),
  };
};

/** The client test/bench/peers/oidc-provider.mjs registers for this flow. */
const PEER_CLIENT = { client_id: 'bench-code', client_secret: 'bench-code-secret-0123456789abcdef' };

async function peerFlow(p: Proc, par = false): Promise<void> {
  const b = new Jar();
  const { verifier, challenge } = pkce();
  const auth = await authorizationUrl(
    { auth: `${p.url}/auth`, par: `${p.url}/request` },
    PEER_CLIENT,
    {
      response_type: 'code',
      redirect_uri: CB,
      scope: 'openid offline_access',
      prompt: 'consent',
      state: randomBytes(12).toString('hex'),
      nonce: randomBytes(12).toString('hex'),
      code_challenge: challenge,
      code_challenge_method: 'S256',
    },
    par,
  );
  // Login then consent: each prompt is an interaction the bench route finishes (like an accept call).
  let loc = await expectRedirect(await b.fetch(auth), 'authorize');
  for (let i = 0; i < 2 && !loc.startsWith(CB); i++) {
    const uid = new URL(loc, p.url).pathname.split('/').at(-1) as string;
    const done = await fetch(`${p.url}/bench/interaction/${uid}`, { method: 'POST', headers: JSON_H, body: '{}' });
    if (done.status !== 200) throw new FlowError(`interaction answered ${done.status}: ${await done.text()}`);
    const returnTo = ((await done.json()) as { returnTo: string }).returnTo;
    loc = await expectRedirect(await b.fetch(on(p.url, returnTo)), 'authorize (resume)');
  }
  const code = param(loc, 'code');
  if (!loc.startsWith(CB) || !code) throw new FlowError(`the peer's flow ended at ${loc}`);
  const tok = await fetch(`${p.url}/token`, {
    method: 'POST',
    headers: { ...FORM, authorization: basic(PEER_CLIENT.client_id, PEER_CLIENT.client_secret) },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CB, code_verifier: verifier }),
  });
  const body = (await tok.json()) as Record<string, unknown>;
  if (tok.status !== 200 || !body.access_token || !body.refresh_token || !body.id_token)
    throw new FlowError(`peer code exchange answered ${tok.status}: ${JSON.stringify(body).slice(0, 300)}`);
}

const peerSide = (par: boolean): Side => ({
  url: (p) => p.url,
  async setup(p) {
    await peerFlow(p, par);
    return [];
  },
  drive: (p, o) => loops(o.connections, o.seconds, () => peerFlow(p, par)),
});

export const scenarios: Scenario[] = [
  {
    name: 'authorization-code flow, end to end (per flow)',
    connections: 20,
    gatehouse: gatehouseSide(false),
    peer: { kind: 'oidc-provider', side: peerSide(false) },
  },
  {
    name: 'authorization-code flow through PAR (RFC 9126), end to end (per flow)',
    connections: 20,
    gatehouse: gatehouseSide(true),
    peer: { kind: 'oidc-provider', side: peerSide(true) },
  },
];
