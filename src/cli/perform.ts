/**
 * `gatehouse perform authorization-code` (Hydra's `perform authorization-code`): runs the browser
 * flow against the public API as a relying party. It listens on a loopback callback
 * (`http://127.0.0.1:<port>/callback`), prints the authorization URL to open, exchanges the code it
 * receives (with PKCE S256) and prints the tokens. The client comes from the flags or from
 * `OAUTH2_CLIENT_ID` / `OAUTH2_CLIENT_SECRET`; the public URL from `--endpoint` or `ORY_SDK_URL`.
 * `gatehouse perform device-code` runs the device authorization grant the same way.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Command } from 'commander';
import { run } from './common.ts';
import { basicAuthorization, objectBody, send } from './endpoint.ts';

interface PerformOptions {
  clientId?: string;
  clientSecret?: string;
  endpoint?: string;
  port: string;
  scope: string;
  audience?: string;
  prompt?: string;
  maxAge?: string;
  redirect?: string;
  open: boolean;
  format: string;
}

interface Tokens {
  access_token?: string;
  refresh_token?: string;
  id_token?: string;
  expires_in?: number;
  scope?: string;
  token_type?: string;
}

const b64 = (n: number) => randomBytes(n).toString('base64url');

function base(endpoint: string | undefined): URL {
  if (!endpoint) throw new Error('no public endpoint: pass --endpoint or set ORY_SDK_URL');
  try {
    return new URL(endpoint.endsWith('/') ? endpoint : `${endpoint}/`);
  } catch {
    throw new Error(`the endpoint ${JSON.stringify(endpoint)} is not a URL`);
  }
}

async function exchange(
  o: PerformOptions,
  id: string,
  secret: string,
  code: string,
  verifier: string,
  redirect: string,
) {
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirect,
    code_verifier: verifier,
  });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (secret) headers.authorization = basicAuthorization(id, secret);
  else form.set('client_id', id);
  const r = await send(new URL('oauth2/token', base(o.endpoint)), { method: 'POST', headers, body: form });
  const body = objectBody(r) as Tokens & { error?: string; error_description?: string };
  if (!r.ok)
    throw new Error(
      `the token endpoint answered ${r.status}: ${body.error ?? ''} ${body.error_description ?? ''}`.trim(),
    );
  return body;
}

function printTokens(t: Tokens, format: string): void {
  if (format === 'json') {
    process.stdout.write(`${JSON.stringify(t, null, 2)}\n`);
    return;
  }
  const expiry = t.expires_in ? new Date(Date.now() + t.expires_in * 1000).toISOString() : '';
  const rows: Array<[string, string]> = [
    ['ACCESS TOKEN', t.access_token ?? ''],
    ['REFRESH TOKEN', t.refresh_token ?? ''],
    ['ID TOKEN', t.id_token ?? ''],
    ['EXPIRY', expiry],
    ['SCOPE', t.scope ?? ''],
  ];
  process.stdout.write(`${rows.map(([k, v]) => `${k}\t${v}`).join('\n')}\n`);
}

async function authorizationCode(o: PerformOptions): Promise<void> {
  const id = o.clientId || process.env.OAUTH2_CLIENT_ID || '';
  const secret = o.clientSecret ?? process.env.OAUTH2_CLIENT_SECRET ?? '';
  if (!id) throw new Error('no client: pass --client-id or set OAUTH2_CLIENT_ID');
  const port = Number(o.port);
  const redirect = o.redirect || `http://127.0.0.1:${port}/callback`;
  const state = b64(24);
  const verifier = b64(32);
  const auth = new URL('oauth2/auth', base(o.endpoint));
  const q = auth.searchParams;
  q.set('client_id', id);
  q.set('response_type', 'code');
  q.set('redirect_uri', redirect);
  q.set('scope', o.scope.split(',').filter(Boolean).join(' '));
  q.set('state', state);
  q.set('nonce', b64(24));
  q.set('code_challenge', createHash('sha256').update(verifier).digest('base64url'));
  q.set('code_challenge_method', 'S256');
  if (o.audience) q.set('audience', o.audience.split(',').join(' '));
  if (o.prompt) q.set('prompt', o.prompt.split(',').join(' '));
  if (o.maxAge) q.set('max_age', o.maxAge);
  const callbackPath = new URL(redirect).pathname;

  const tokens = await new Promise<Tokens>((resolve, reject) => {
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const u = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
      if (u.pathname !== callbackPath) {
        res.writeHead(302, { location: auth.toString() }).end();
        return;
      }
      const done = (status: number, text: string, result: Tokens | Error) => {
        res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(text);
        server.close();
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      const p = u.searchParams;
      if (p.get('error')) {
        done(400, 'The authorization failed.\n', new Error(`${p.get('error')}: ${p.get('error_description') ?? ''}`));
      } else if (p.get('state') !== state) {
        done(400, 'The state does not match.\n', new Error('the callback state does not match the request'));
      } else {
        exchange(o, id, secret, p.get('code') ?? '', verifier, redirect).then(
          (t) => done(200, 'Done: the tokens are printed in your terminal.\n', t),
          (e: Error) => done(502, 'The code exchange failed.\n', e),
        );
      }
    });
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      process.stderr.write(`Waiting for the callback on ${redirect}\n`);
      process.stdout.write(`Open this URL to log in:\n${auth.toString()}\n`);
    });
  });
  printTokens(tokens, o.format);
}

interface DeviceOptions {
  clientId?: string;
  clientSecret?: string;
  endpoint?: string;
  scope: string;
  audience?: string;
  format: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `perform device-code` (Hydra's): the device authorization request, the verification URI and user
 * code printed for the user, then polling the token endpoint at the given interval (5 s more after
 * each `slow_down`, RFC 8628 §3.5) until tokens, an error, or the device code's expiry.
 */
async function deviceCode(o: DeviceOptions): Promise<void> {
  const id = o.clientId || process.env.OAUTH2_CLIENT_ID || '';
  const secret = o.clientSecret ?? process.env.OAUTH2_CLIENT_SECRET ?? '';
  if (!id) throw new Error('no client: pass --client-id or set OAUTH2_CLIENT_ID');
  const root = base(o.endpoint);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (secret) headers.authorization = basicAuthorization(id, secret);
  const form = new URLSearchParams({ client_id: id, scope: o.scope.split(',').filter(Boolean).join(' ') });
  if (o.audience) form.set('audience', o.audience.split(',').join(' '));
  const r = await send(new URL('oauth2/device/auth', root), { method: 'POST', headers, body: form });
  const auth = objectBody(r) as {
    device_code?: string;
    user_code?: string;
    verification_uri?: string;
    verification_uri_complete?: string;
    expires_in?: number;
    interval?: number;
    error?: string;
    error_description?: string;
  };
  if (!r.ok || !auth.device_code) {
    throw new Error(
      `the device authorization endpoint answered ${r.status}: ${auth.error ?? ''} ${auth.error_description ?? ''}`.trim(),
    );
  }
  process.stdout.write(
    `To authenticate, open ${auth.verification_uri_complete}\n(or ${auth.verification_uri} and enter the code ${auth.user_code})\n`,
  );
  let interval = Math.max(1, auth.interval ?? 5) * 1000;
  const deadline = Date.now() + (auth.expires_in ?? 600) * 1000;
  while (Date.now() < deadline) {
    await sleep(interval);
    const poll = new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      device_code: auth.device_code,
    });
    if (!secret) poll.set('client_id', id);
    const t = await send(new URL('oauth2/token', root), { method: 'POST', headers, body: poll });
    const body = objectBody(t) as Tokens & { error?: string; error_description?: string };
    if (t.ok) {
      printTokens(body, o.format);
      return;
    }
    if (body.error === 'authorization_pending') continue;
    if (body.error === 'slow_down') {
      interval += 5000;
      continue;
    }
    throw new Error(
      `the token endpoint answered ${t.status}: ${body.error ?? ''} ${body.error_description ?? ''}`.trim(),
    );
  }
  throw new Error('the device code expired before the user authorized it');
}

export function registerPerform(program: Command): void {
  const perform =
    program.commands.find((c) => c.name() === 'perform') ??
    program.command('perform').description('Run an OAuth 2.0 flow against the public API');
  perform
    .command('authorization-code')
    .description('Run the authorization-code flow with a loopback callback and print the tokens')
    .option('--client-id <id>', 'OAuth 2.0 client id (or OAUTH2_CLIENT_ID)')
    .option('--client-secret <secret>', 'OAuth 2.0 client secret (or OAUTH2_CLIENT_SECRET); omit for public clients')
    .option('-e, --endpoint <url>', 'public URL of gatehouse (or ORY_SDK_URL)', process.env.ORY_SDK_URL)
    .option('--port <port>', 'port of the loopback callback server', '4446')
    .option('--scope <scopes>', 'comma separated scopes', 'offline,openid')
    .option('--audience <audiences>', 'comma separated audiences')
    .option('--prompt <prompt>', 'comma separated prompt values (login, consent, none, select_account)')
    .option('--max-age <seconds>', 'max_age of the authorization request')
    .option('--redirect <url>', 'redirect URI (default http://127.0.0.1:<port>/callback)')
    .option('--no-open', 'do not try to open a browser (gatehouse never does; kept for Hydra compatibility)')
    .option('--format <format>', 'output: default or json', 'default')
    .action((o: PerformOptions) => run(() => authorizationCode(o)));
  perform
    .command('device-code')
    .description('Run the device authorization grant (RFC 8628): print the user code, poll, print the tokens')
    .option('--client-id <id>', 'OAuth 2.0 client id (or OAUTH2_CLIENT_ID)')
    .option('--client-secret <secret>', 'OAuth 2.0 client secret (or OAUTH2_CLIENT_SECRET); omit for public clients')
    .option('-e, --endpoint <url>', 'public URL of gatehouse (or ORY_SDK_URL)', process.env.ORY_SDK_URL)
    .option('--scope <scopes>', 'comma separated scopes', 'offline,openid')
    .option('--audience <audiences>', 'comma separated audiences')
    .option('--format <format>', 'output: default or json', 'default')
    .action((o: DeviceOptions) => run(() => deviceCode(o)));
}
