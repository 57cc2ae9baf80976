/**
 * Hydra's OAuth 2.0 client commands over the admin API: `create oauth2-client` (alias `client`),
 * `get oauth2-client <id…>`, `list oauth2-clients`, `update oauth2-client <id>`,
 * `delete oauth2-client <id…>`, with Hydra's flag names and output formats.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { collect, run, verb } from './common.ts';
import { adminApiOf, adminRequest, endpointOption } from './endpoint.ts';
import { type Format, formatOf, formatOption, type Printable, printRow, printTable, quietOption } from './printing.ts';

/** An OAuth 2.0 client as the admin API reads and writes it: the printed fields typed, the others passed through. */
export interface Client {
  client_id?: string;
  client_secret?: string;
  grant_types?: string[];
  response_types?: string[];
  scope?: string;
  audience?: string[];
  redirect_uris?: string[];
  [field: string]: unknown;
}

/** What commander parsed: the flags of the tables below by their camelCase name, and the others. */
interface Opts {
  file?: string;
  metadata?: string;
  id?: string;
  pageSize?: string;
  pageToken?: string;
  endpoint?: string;
  token?: string;
  format?: string;
  quiet?: boolean;
  [flag: string]: string | string[] | boolean | undefined;
}

/** [flag, wire field, description, Hydra's default]. */
const STRINGS: Array<[string, string, string, string]> = [
  ['name', 'client_name', "The client's name.", ''],
  ['secret', 'client_secret', "Provide the client's secret.", ''],
  ['owner', 'owner', 'The owner of this client, typically email addresses or a user ID.', ''],
  [
    'token-endpoint-auth-method',
    'token_endpoint_auth_method',
    'client_secret_basic, client_secret_post, private_key_jwt, none, tls_client_auth or self_signed_tls_client_auth.',
    'client_secret_basic',
  ],
  ['jwks-uri', 'jwks_uri', 'URL of the JSON Web Key Set used for private_key_jwt.', ''],
  ['policy-uri', 'policy_uri', 'URL of the privacy policy (http or https).', ''],
  ['tos-uri', 'tos_uri', 'URL of the terms of service (http or https).', ''],
  ['client-uri', 'client_uri', 'URL of a web page about the client (http or https).', ''],
  ['logo-uri', 'logo_uri', 'URL of the client logo (http or https).', ''],
  ['subject-type', 'subject_type', 'Subject identifier algorithm: public or pairwise.', 'public'],
  ['frontchannel-logout-callback', 'frontchannel_logout_uri', 'URL rendered in an iframe on logout.', ''],
  ['backchannel-logout-callback', 'backchannel_logout_uri', 'URL that receives a logout token on logout.', ''],
  ['access-token-strategy', 'access_token_strategy', 'Access token format: opaque or jwt.', ''],
  [
    'tls-client-auth-subject-dn',
    'tls_client_auth_subject_dn',
    'tls_client_auth: the subject DN (RFC 4514) of the client certificate (RFC 8705).',
    '',
  ],
  [
    'tls-client-auth-san-dns',
    'tls_client_auth_san_dns',
    'tls_client_auth: a DNS name SAN of the client certificate.',
    '',
  ],
  ['tls-client-auth-san-uri', 'tls_client_auth_san_uri', 'tls_client_auth: a URI SAN of the client certificate.', ''],
  [
    'tls-client-auth-san-ip',
    'tls_client_auth_san_ip',
    'tls_client_auth: an IP address SAN of the client certificate.',
    '',
  ],
  [
    'tls-client-auth-san-email',
    'tls_client_auth_san_email',
    'tls_client_auth: an e-mail address SAN of the client certificate.',
    '',
  ],
  [
    'request-object-signing-alg',
    'request_object_signing_alg',
    'Algorithm request objects must be signed with.',
    'RS256',
  ],
  [
    'sector-identifier-uri',
    'sector_identifier_uri',
    'https URL of a JSON array of redirect URIs (pairwise subjects).',
    '',
  ],
];
const LISTS: Array<[string, string, string, string[]]> = [
  ['redirect-uri', 'redirect_uris', 'Allowed redirect URIs (repeat or comma-separate).', []],
  ['grant-type', 'grant_types', 'Allowed grant types.', ['authorization_code']],
  ['response-type', 'response_types', 'Allowed response types.', ['code']],
  ['scope', 'scope', 'Scopes the client may request (joined with spaces).', []],
  ['audience', 'audience', 'Audiences the client may request.', []],
  ['allowed-cors-origin', 'allowed_cors_origins', 'Origins allowed to make CORS requests.', []],
  ['post-logout-callback', 'post_logout_redirect_uris', 'URLs allowed after logout.', []],
  ['contact', 'contacts', 'Ways to contact the people responsible for this client.', []],
  ['request-uri', 'request_uris', 'Pre-registered request_uri values.', []],
];
const BOOLS: Array<[string, string, string]> = [
  ['skip-consent', 'skip_consent', 'Skip the consent screen for this client.'],
  ['skip-logout-consent', 'skip_logout_consent', 'Skip the logout consent screen for this client.'],
  [
    'require-pushed-authorization-requests',
    'require_pushed_authorization_requests',
    'Authorization requests of this client must be pushed first (RFC 9126).',
  ],
  [
    'dpop-bound-access-tokens',
    'dpop_bound_access_tokens',
    'Token requests of this client must carry a DPoP proof (RFC 9449).',
  ],
  [
    'tls-client-certificate-bound-access-tokens',
    'tls_client_certificate_bound_access_tokens',
    'Access tokens of this client are bound to its TLS client certificate (RFC 8705).',
  ],
  [
    'frontchannel-logout-session-required',
    'frontchannel_logout_session_required',
    'Front-channel logout needs iss and sid.',
  ],
  [
    'backchannel-logout-session-required',
    'backchannel_logout_session_required',
    'Back-channel logout tokens need a sid.',
  ],
];

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

/** The flags every client command has: where the admin API is, and how to print. */
const withOutputFlags = (cmd: Command): Command =>
  cmd.addOption(endpointOption()).addOption(formatOption()).addOption(quietOption());

function withClientFlags(cmd: Command): Command {
  cmd.option(
    '--file <path>',
    'read the client as JSON from this file ("-" for stdin); the other client flags are ignored',
  );
  for (const [flag, , desc, def] of STRINGS) cmd.option(`--${flag} <value>`, desc + (def ? ` (default "${def}")` : ''));
  for (const [flag, , desc, def] of LISTS)
    cmd.option(`--${flag} <value>`, desc + (def.length ? ` (default ${def.join(',')})` : ''), collect);
  for (const [flag, , desc] of BOOLS) cmd.option(`--${flag}`, desc);
  cmd.option('--metadata <json>', 'arbitrary JSON metadata', '{}');
  return withOutputFlags(cmd);
}

/** The client body from the flags (Hydra sends every field, with its flag defaults) or from --file. */
function clientFromFlags(o: Opts): Client {
  if (o.file) {
    const text = o.file === '-' ? readFileSync(0, 'utf8') : readFileSync(o.file, 'utf8');
    try {
      return JSON.parse(text) as Client;
    } catch {
      throw new Error(`unable to decode JSON from ${o.file === '-' ? 'stdin' : o.file}`);
    }
  }
  const c: Record<string, unknown> = {};
  for (const [flag, field, , def] of STRINGS) c[field] = o[camel(flag)] ?? def;
  for (const [flag, field, , def] of LISTS) c[field] = o[camel(flag)] ?? def;
  for (const [flag, field] of BOOLS) c[field] = Boolean(o[camel(flag)]);
  c.scope = (c.scope as string[]).join(' ');
  try {
    c.metadata = JSON.parse(o.metadata ?? '{}');
  } catch {
    throw new Error('--metadata is not valid JSON');
  }
  return c as Client;
}

const HEADER = ['CLIENT ID', 'CLIENT SECRET', 'GRANT TYPES', 'RESPONSE TYPES', 'SCOPE', 'AUDIENCE', 'REDIRECT URIS'];
const columns = (c: Client): string[] => [
  c.client_id ?? '',
  c.client_secret ?? '',
  (c.grant_types ?? []).join(', '),
  (c.response_types ?? []).join(', '),
  c.scope ?? '',
  (c.audience ?? []).join(','),
  (c.redirect_uris ?? []).join(', '),
];
export const one = (c: Client): Printable => ({
  header: HEADER,
  rows: [columns(c)],
  value: c,
  ids: [c.client_id ?? ''],
});
export const many = (cs: Client[]): Printable => ({
  header: HEADER,
  rows: cs.map(columns),
  value: cs,
  ids: cs.map((c) => c.client_id ?? ''),
});

const clientPath = (id: string) => `/admin/clients/${encodeURIComponent(id)}`;

/** The page_token of the Link header's rel="next", or '' on the last page. */
function nextPageToken(link: string | null): string {
  const next = /<([^>]*)>;\s*rel="next"/.exec(link ?? '')?.[1];
  return next ? (new URL(next, 'http://x').searchParams.get('page_token') ?? '') : '';
}

async function writeClient(o: Opts, method: 'POST' | 'PUT', path: string, body: Client, format: Format) {
  const r = await adminRequest(adminApiOf(o), method, path, body);
  const c = r.body as Client;
  if (!c.client_secret && body.client_secret) c.client_secret = body.client_secret;
  printRow(format, one(c));
}

function registerCreate(program: Command): void {
  withClientFlags(
    verb(program, 'create', 'Create resources')
      .command('oauth2-client')
      .alias('client')
      .description('Create an OAuth 2.0 client')
      .option('--id <id>', "Provide the client's id."),
  ).action((o: Opts) =>
    run(async () => {
      const body = clientFromFlags(o);
      if (o.id) body.client_id = o.id;
      await writeClient(o, 'POST', '/admin/clients', body, formatOf(o));
    }),
  );
}

function registerUpdate(program: Command): void {
  withClientFlags(
    verb(program, 'update', 'Update resources')
      .command('oauth2-client')
      .alias('client')
      .argument('<id>', 'client id')
      .description('Replace an OAuth 2.0 client (fields without a flag go back to their defaults)'),
  ).action((id: string, o: Opts) => run(() => writeClient(o, 'PUT', clientPath(id), clientFromFlags(o), formatOf(o))));
}

function registerGet(program: Command): void {
  withOutputFlags(
    verb(program, 'get', 'Get resources')
      .command('oauth2-client')
      .aliases(['client', 'clients', 'oauth2-clients'])
      .argument('<ids...>', 'client ids')
      .description('Get one or more OAuth 2.0 clients'),
  ).action((ids: string[], o: Opts) =>
    run(async () => {
      const api = adminApiOf(o);
      const cs: Client[] = [];
      for (const id of ids) cs.push((await adminRequest(api, 'GET', clientPath(id))).body as Client);
      if (cs.length === 1) printRow(formatOf(o), one(cs[0] as Client));
      else printTable(formatOf(o), many(cs));
    }),
  );
}

function registerList(program: Command): void {
  withOutputFlags(
    verb(program, 'list', 'List resources')
      .command('oauth2-clients')
      .alias('clients')
      .description('List OAuth 2.0 clients, one page at a time')
      .option('--page-size <n>', 'maximum number of items to return', '100')
      .option('--page-token <token>', 'page token acquired from a previous response', ''),
  ).action((o: Opts) =>
    run(async () => {
      const pageSize = o.pageSize ?? '';
      if (!/^\d+$/.test(pageSize)) throw new Error(`--page-size must be a number, got ${JSON.stringify(o.pageSize)}`);
      const q = new URLSearchParams({ page_size: pageSize, ...(o.pageToken ? { page_token: o.pageToken } : {}) });
      const r = await adminRequest(adminApiOf(o), 'GET', `/admin/clients?${q}`);
      const items = r.body as Client[];
      const next = nextPageToken(r.headers.get('link'));
      const p = many(items);
      printTable(formatOf(o), {
        ...p,
        value: { items, next_page_token: next, is_last_page: next === '' },
        footer: [[''], ['NEXT PAGE TOKEN', next], ['IS LAST PAGE', String(next === '')]],
      });
    }),
  );
}

function registerDelete(program: Command): void {
  withOutputFlags(
    verb(program, 'delete', 'Delete resources')
      .command('oauth2-client')
      .aliases(['client', 'clients', 'oauth2-clients'])
      .argument('<ids...>', 'client ids')
      .description('Delete one or more OAuth 2.0 clients'),
  ).action((ids: string[], o: Opts) =>
    run(async () => {
      const api = adminApiOf(o);
      const deleted: string[] = [];
      const failed: string[] = [];
      for (const id of ids) {
        try {
          await adminRequest(api, 'DELETE', clientPath(id));
          deleted.push(id);
        } catch (e) {
          failed.push(`${id}: ${(e as Error).message}`);
        }
      }
      const p: Printable = { header: ['ID'], rows: deleted.map((d) => [d]), value: deleted, ids: deleted };
      if (deleted.length === 1) printRow(formatOf(o), { ...p, value: deleted[0] });
      else if (deleted.length > 1) printTable(formatOf(o), p);
      if (failed.length) throw new Error(failed.join('\nerror: '));
    }),
  );
}

export function registerClients(program: Command): void {
  registerCreate(program);
  registerUpdate(program);
  registerGet(program);
  registerList(program);
  registerDelete(program);
}
