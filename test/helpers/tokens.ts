/**
 * Token endpoint, introspection and revocation calls for tests, plus a helper that runs the code
 * flow and returns the tokens.
 */
import type { TestServer } from './apps.ts';
import type { JsonBody } from './json.ts';
import { Browser, type CreatedClient, codeFlowUrl, exchangeCode, type FlowScript, param, runFlow } from './oauth2.ts';

export interface Reply {
  status: number;
  body: Record<string, JsonBody>;
  res: Response;
}

async function reply(res: Response): Promise<Reply> {
  const text = await res.text();
  let body: Record<string, JsonBody> = {};
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    body = { text };
  }
  return { status: res.status, body, res };
}

export const basic = (c: CreatedClient) =>
  `Basic ${Buffer.from(`${encodeURIComponent(c.client_id)}:${encodeURIComponent(c.client_secret ?? '')}`).toString('base64')}`;

/** Form headers with client_secret_basic, or `client_id` added to `body` for a public client. */
function authenticate(client: CreatedClient | undefined, body: URLSearchParams): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (client?.client_secret) headers.authorization = basic(client);
  else if (client) body.set('client_id', client.client_id);
  return headers;
}

/**
 * POST /oauth2/token with client_secret_basic (or client_id in the form for public clients);
 * `headers` are added (a `DPoP` proof, …).
 */
export async function tokenRequest(
  t: TestServer,
  client: CreatedClient | undefined,
  form: Record<string, string | string[]>,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x);
  return reply(
    await fetch(`${t.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: { ...authenticate(client, body), ...headers },
      body,
    }),
  );
}

export const refresh = (
  t: TestServer,
  client: CreatedClient,
  refreshToken: string,
  extra: Record<string, string> = {},
) => tokenRequest(t, client, { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra });

export async function introspect(t: TestServer, token: string, extra: Record<string, string> = {}): Promise<Reply> {
  return reply(
    await fetch(`${t.adminUrl}/admin/oauth2/introspect`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, ...extra }),
    }),
  );
}

export const isActive = async (t: TestServer, token: string) => (await introspect(t, token)).body.active === true;

export async function revoke(
  t: TestServer,
  client: CreatedClient,
  token: string,
  extra: Record<string, string> = {},
): Promise<Reply> {
  const body = new URLSearchParams({ token, ...extra });
  const headers = authenticate(client, body);
  return reply(await fetch(`${t.publicUrl}/oauth2/revoke`, { method: 'POST', headers, body }));
}

/** Runs login + consent for `scope` and exchanges the code: `{access_token, refresh_token?, id_token?}`. */
export async function codeTokens(
  t: TestServer,
  client: CreatedClient,
  scope = 'openid offline',
  script: FlowScript = {},
  subject = 'alice',
): Promise<Record<string, string>> {
  const r = await runFlow(t, new Browser(), codeFlowUrl(t, client, scope), { login: () => ({ subject }), ...script });
  const code = param(r.final, 'code');
  if (!code) throw new Error(`no code at ${r.final}`);
  const tok = await exchangeCode(t, client, code);
  if (tok.status !== 200) throw new Error(`code exchange: ${tok.status} ${JSON.stringify(tok.body)}`);
  return tok.body as Record<string, string>;
}
