/**
 * Plays a browser and a login & consent app against a test server: a cookie jar, redirects followed
 * by hand, and the admin API through `@ory/hydra-client` (as a real Hydra login app would).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { TestServer } from './apps.ts';
import { adminApi as adminApiAt } from './clients.ts';

/** The redirect URI that `createClient` registers and `exchangeCode` sends. */
export const CB = 'http://127.0.0.1:9999/cb';

export const randomState = () => randomBytes(12).toString('hex');

export function pkcePair(method: 'S256' | 'plain' = 'S256') {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
  return { verifier, challenge, method };
}

export const adminApi = (t: TestServer) => adminApiAt(t.adminUrl);

export interface CreatedClient {
  client_id: string;
  client_secret?: string;
  [k: string]: unknown;
}

export async function createClient(t: TestServer, body: Record<string, unknown> = {}): Promise<CreatedClient> {
  const r = await fetch(`${t.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      redirect_uris: [CB],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'openid offline offline_access profile',
      ...body,
    }),
  });
  if (r.status !== 201) throw new Error(`client create: ${r.status} ${await r.text()}`);
  return (await r.json()) as CreatedClient;
}

/** A browser's cookies for 127.0.0.1 (cookies are not isolated by port). */
export class Browser {
  readonly cookies = new Map<string, string>();

  private store(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(';');
      const eq = (pair as string).indexOf('=');
      const name = (pair as string).slice(0, eq).trim();
      const value = (pair as string).slice(eq + 1).trim();
      const expired = attrs.some((a) => /expires=Thu, 01 Jan 1970/i.test(a) || /max-age=0\b/i.test(a.trim()));
      if (!value || expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** One request, redirects not followed. */
  async get(url: string, init: RequestInit = {}): Promise<{ status: number; location: string; res: Response }> {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: this.cookieHeader() },
    });
    this.store(res);
    return { status: res.status, location: res.headers.get('location') ?? '', res };
  }
}

export function authorizeUrl(t: TestServer, params: Record<string, string>): string {
  const u = new URL('/oauth2/auth', t.publicUrl);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

/** `/oauth2/auth` for a code flow of `client` back to CB with a fresh state; `extra` adds or replaces parameters. */
export const codeFlowUrl = (
  t: TestServer,
  client: { client_id: string },
  scope: string,
  extra: Record<string, string> = {},
) =>
  authorizeUrl(t, {
    client_id: client.client_id,
    response_type: 'code',
    redirect_uri: CB,
    scope,
    state: randomState(),
    ...extra,
  });

export const param = (url: string, name: string) => {
  const u = new URL(url);
  return u.searchParams.get(name) ?? new URLSearchParams(u.hash.slice(1)).get(name);
};

export interface FlowScript {
  /** Body for login accept; `false` rejects. Default: accept as `alice` (or the skipped subject). */
  login?: (req: { skip: boolean; subject: string; challenge: string }) => Record<string, unknown> | false;
  /** Body for consent accept; `false` rejects. Default: grant every requested scope. */
  consent?: (req: { skip: boolean; requested_scope: string[]; challenge: string }) => Record<string, unknown> | false;
}

export interface FlowResult {
  /** Where the flow ended: the client's redirect URI (or the error page). */
  final: string;
  loginSeen?: { skip: boolean; subject: string };
  consentSeen?: { skip: boolean; consent_request_id: string };
  loginVerifierUrl?: string;
  consentVerifierUrl?: string;
}

/** Runs the authorize → login → consent → client redirect dance; stops early when the server does. */
export async function runFlow(
  t: TestServer,
  browser: Browser,
  url: string,
  script: FlowScript = {},
): Promise<FlowResult> {
  const api = adminApi(t);
  const out: Partial<FlowResult> = {};
  let step = await browser.get(url);
  for (let i = 0; i < 6; i++) {
    if (step.status !== 302 && step.status !== 303) throw new Error(`unexpected status ${step.status}`);
    const loc = step.location;
    const login = param(loc, 'login_challenge');
    const consent = param(loc, 'consent_challenge');
    if (login && !loc.startsWith(`${t.publicUrl}/oauth2/auth`)) {
      const { data } = await api.getOAuth2LoginRequest({ loginChallenge: login });
      out.loginSeen = { skip: data.skip, subject: data.subject };
      const body = (script.login ?? (() => ({ subject: data.skip ? data.subject : 'alice' })))({
        skip: data.skip,
        subject: data.subject,
        challenge: login,
      });
      const r =
        body === false
          ? await api.rejectOAuth2LoginRequest({
              loginChallenge: login,
              rejectOAuth2Request: { error: 'access_denied' },
            })
          : await api.acceptOAuth2LoginRequest({ loginChallenge: login, acceptOAuth2LoginRequest: body as never });
      out.loginVerifierUrl = r.data.redirect_to;
      step = await browser.get(r.data.redirect_to);
      continue;
    }
    if (consent && !loc.startsWith(`${t.publicUrl}/oauth2/auth`)) {
      const { data } = await api.getOAuth2ConsentRequest({ consentChallenge: consent });
      out.consentSeen = { skip: !!data.skip, consent_request_id: data.consent_request_id ?? '' };
      const body = (script.consent ?? ((q) => ({ grant_scope: q.requested_scope })))({
        skip: !!data.skip,
        requested_scope: data.requested_scope ?? [],
        challenge: consent,
      });
      const r =
        body === false
          ? await api.rejectOAuth2ConsentRequest({
              consentChallenge: consent,
              rejectOAuth2Request: {
                error: 'access_denied',
                error_description: 'The resource owner denied the request',
              },
            })
          : await api.acceptOAuth2ConsentRequest({
              consentChallenge: consent,
              acceptOAuth2ConsentRequest: body as never,
            });
      out.consentVerifierUrl = r.data.redirect_to;
      step = await browser.get(r.data.redirect_to);
      continue;
    }
    return { ...out, final: loc };
  }
  throw new Error('too many redirects');
}

/** Exchanges a code at the token endpoint with client_secret_basic. */
export async function exchangeCode(
  t: TestServer,
  client: CreatedClient,
  code: string,
  extra: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; res: Response }> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (client.client_secret) {
    headers.authorization = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
  }
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    redirect_uri: CB,
    ...(client.client_secret ? {} : { client_id: client.client_id }),
    ...extra,
  });
  const res = await fetch(`${t.publicUrl}/oauth2/token`, { method: 'POST', headers, body: form });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, res };
}
