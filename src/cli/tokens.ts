/**
 * Hydra's token commands: `perform client-credentials` and `revoke token <t>` (public API),
 * `introspect token <t>` and `delete access-tokens <client-id>` (admin API). The URL comes from
 * `-e/--endpoint` or `ORY_SDK_URL`; the client from `--client-id`/`--client-secret` or
 * `OAUTH2_CLIENT_ID`/`OAUTH2_CLIENT_SECRET`. Output as the other admin commands (`--format`).
 */
import { type Command, Option } from 'commander';
import { collect, run, verb } from './common.ts';
import {
  adminApiOf,
  adminHeaders,
  adminRequest,
  basicAuthorization,
  endpointOf,
  endpointOption,
  objectBody,
  send,
} from './endpoint.ts';
import { formatOf, formatOption, type Printable, printRow } from './printing.ts';

/** What commander parsed. */
interface Opts {
  endpoint?: string;
  token?: string;
  clientId?: string;
  clientSecret?: string;
  scope?: string[];
  audience?: string[];
  format?: string;
  quiet?: boolean;
}

/** The token endpoint's answer (RFC 6749 §5.1), or {} when it had no JSON body. */
interface TokenAnswer {
  access_token?: string;
  token_type?: string;
  refresh_token?: string;
  id_token?: string;
  expires_in?: number;
  scope?: string;
}

/** The introspection answer (RFC 7662 §2.2, with Hydra's token_use), or an error (RFC 6749 §5.2). */
interface IntrospectionAnswer {
  active?: boolean;
  sub?: string;
  client_id?: string;
  scope?: string;
  exp?: number;
  token_use?: string;
  error?: string;
  error_description?: string;
}

const publicEndpoint = () =>
  new Option('-e, --endpoint <url>', 'public API URL (e.g. http://127.0.0.1:4444)').env('ORY_SDK_URL');

function credentials(o: Opts): { id: string; secret: string } {
  const id = o.clientId || process.env.OAUTH2_CLIENT_ID || '';
  const secret = o.clientSecret || process.env.OAUTH2_CLIENT_SECRET || '';
  if (!id || !secret) {
    throw new Error(
      'Please provide a Client ID and Client Secret using flags --client-id and --client-secret, or environment variables OAUTH2_CLIENT_ID and OAUTH2_CLIENT_SECRET.',
    );
  }
  return { id, secret };
}

/** A form POST to the public API with client_secret_basic; the parsed JSON body (or ''). */
async function publicPost(
  o: Opts,
  path: string,
  form: URLSearchParams,
): Promise<{ status: number; body: TokenAnswer }> {
  const base = endpointOf(o);
  const { id, secret } = credentials(o);
  const r = await send(
    `${base}${path}`,
    {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basicAuthorization(id, secret),
      },
      body: form,
    },
    base,
  );
  const body = objectBody(r) as TokenAnswer & { error?: unknown; error_description?: unknown };
  if (r.status >= 400) {
    const why = typeof body.error === 'string' ? `${body.error}: ${body.error_description ?? ''}` : r.text;
    throw new Error(`${r.status} ${why}`.trim());
  }
  return { status: r.status, body: body as TokenAnswer };
}

const goTime = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

async function clientCredentials(o: Opts): Promise<void> {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (o.scope?.length) form.set('scope', o.scope.join(' '));
  if (o.audience?.length) form.set('audience', o.audience.join(' '));
  const { body } = await publicPost(o, '/oauth2/token', form);
  const expiry = goTime(Math.floor(Date.now() / 1000) + Number(body.expires_in ?? 0));
  const value = {
    access_token: body.access_token,
    token_type: body.token_type,
    ...(body.refresh_token ? { refresh_token: body.refresh_token } : {}),
    expiry,
    ...(body.scope !== undefined ? { scope: body.scope } : {}),
  };
  const p: Printable = {
    header: ['ACCESS TOKEN', 'REFRESH TOKEN', 'ID TOKEN', 'EXPIRY'],
    rows: [[body.access_token ?? '', body.refresh_token || '<empty>', body.id_token || '<empty>', expiry]],
    value,
    ids: [body.access_token ?? ''],
  };
  printRow(formatOf(o), p);
}

async function introspectToken(token: string, o: Opts): Promise<void> {
  const form = new URLSearchParams({ token });
  if (o.scope?.length) form.set('scope', o.scope.join(' '));
  const api = adminApiOf(o);
  const r = await send(
    `${api.base}/admin/oauth2/introspect`,
    {
      method: 'POST',
      headers: adminHeaders(api.token, {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      }),
      body: form,
    },
    api.base,
  );
  const body = objectBody(r) as IntrospectionAnswer;
  if (r.status >= 400) throw new Error(`${r.status} ${body.error ?? 'error'}: ${body.error_description ?? ''}`.trim());
  printRow(formatOf(o), {
    header: ['ACTIVE', 'SUBJECT', 'CLIENT ID', 'SCOPE', 'EXPIRY', 'TOKEN USE'],
    rows: [
      [
        String(body.active === true),
        body.sub ?? '',
        body.client_id ?? '',
        body.scope ?? '',
        goTime(Number(body.exp ?? 0)),
        body.token_use ?? '',
      ],
    ],
    value: body,
    ids: [body.sub ?? ''],
  });
}

async function revokeToken(token: string, o: Opts): Promise<void> {
  await publicPost(o, '/oauth2/revoke', new URLSearchParams({ token }));
  printRow(formatOf(o), { header: ['ID'], rows: [[token]], value: token, ids: [token] });
}

async function deleteAccessTokens(clientId: string, o: Opts): Promise<void> {
  await adminRequest(adminApiOf(o), 'DELETE', `/admin/oauth2/tokens?client_id=${encodeURIComponent(clientId)}`);
  printRow(formatOf(o), { header: ['ID'], rows: [[clientId]], value: clientId, ids: [clientId] });
}

const clientFlags = (c: Command) =>
  c
    .option('--client-id <id>', 'OAuth 2.0 client id (or OAUTH2_CLIENT_ID)')
    .option('--client-secret <secret>', 'OAuth 2.0 client secret (or OAUTH2_CLIENT_SECRET)');

export function registerTokens(program: Command): void {
  clientFlags(
    verb(program, 'perform', 'Run an OAuth 2.0 flow against the public API')
      .command('client-credentials')
      .description('Perform the OAuth 2.0 client credentials flow and print the access token'),
  )
    .option('--scope <scopes>', 'OAuth 2.0 scope to request (repeat or comma-separate)', collect)
    .option('--audience <audiences>', 'access token audience to request (repeat or comma-separate)', collect)
    .addOption(publicEndpoint())
    .addOption(formatOption())
    .action((o: Opts) => run(() => clientCredentials(o)));

  verb(program, 'introspect', 'Introspect OAuth 2.0 tokens (admin API)')
    .command('token <token>')
    .description('Introspect an OAuth 2.0 access or refresh token')
    .option('--scope <scopes>', 'additionally check that these scopes were granted (repeat or comma-separate)', collect)
    .addOption(endpointOption())
    .addOption(formatOption())
    .action((token: string, o: Opts) => run(() => introspectToken(token, o)));

  clientFlags(
    verb(program, 'revoke', 'Revoke OAuth 2.0 tokens (public API)')
      .command('token <token>')
      .description('Revoke an access or refresh token (and every token of its grant)'),
  )
    .addOption(publicEndpoint())
    .addOption(formatOption())
    .action((token: string, o: Opts) => run(() => revokeToken(token, o)));

  verb(program, 'delete', 'Delete resources through the admin API')
    .command('access-tokens <client-id>')
    .description('Delete all OAuth 2.0 access tokens of a client')
    .addOption(endpointOption())
    .addOption(formatOption())
    .action((clientId: string, o: Opts) => run(() => deleteAccessTokens(clientId, o)));
}
