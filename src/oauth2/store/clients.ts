/**
 * The `oauth2_clients` table. Rows ⇄ client records; every query is scoped by network id. Arrays
 * and JSON values are jsonb; a missing list is stored as `[]` (reads then give `[]`, as Hydra's do).
 */
import type { Insertable, Selectable } from 'kysely';
import { mapDbError } from '../../core/db/errors.ts';
import { LIFESPAN_FIELDS, type Lifespans, type StoredClient } from '../clients/model.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID, type Executor, type Oauth2ClientsTable } from '../tables.ts';

type Row = Selectable<Oauth2ClientsTable>;

/** PostgreSQL text cannot hold U+0000, so no stored value contains it: such a key matches nothing (and is no error). */
const unstorable = (...values: Array<string | undefined>) => values.some((v) => v?.includes('\u0000'));

const json = (v: unknown) => JSON.stringify(v);

function toRow(s: StoredClient): Insertable<Oauth2ClientsTable> {
  const c = s.client;
  const row: Insertable<Oauth2ClientsTable> = {
    nid: DEFAULT_NID,
    id: c.client_id,
    client_name: c.client_name,
    client_secret_hash: s.secretHash,
    redirect_uris: json(c.redirect_uris ?? []),
    grant_types: json(c.grant_types ?? []),
    response_types: json(c.response_types ?? []),
    scope: c.scope,
    audience: json(c.audience),
    owner: c.owner,
    policy_uri: c.policy_uri,
    tos_uri: c.tos_uri,
    client_uri: c.client_uri,
    logo_uri: c.logo_uri,
    contacts: json(c.contacts ?? []),
    allowed_cors_origins: json(c.allowed_cors_origins),
    subject_type: c.subject_type,
    sector_identifier_uri: c.sector_identifier_uri,
    jwks: json(c.jwks),
    jwks_uri: c.jwks_uri,
    token_endpoint_auth_method: c.token_endpoint_auth_method,
    token_endpoint_auth_signing_alg: c.token_endpoint_auth_signing_alg,
    request_uris: json(c.request_uris),
    request_object_signing_alg: c.request_object_signing_alg,
    userinfo_signed_response_alg: c.userinfo_signed_response_alg,
    frontchannel_logout_uri: c.frontchannel_logout_uri,
    frontchannel_logout_session_required: c.frontchannel_logout_session_required,
    backchannel_logout_uri: c.backchannel_logout_uri,
    backchannel_logout_session_required: c.backchannel_logout_session_required,
    post_logout_redirect_uris: json(c.post_logout_redirect_uris),
    metadata: json(c.metadata ?? {}),
    access_token_strategy: c.access_token_strategy,
    skip_consent: c.skip_consent,
    skip_logout_consent: c.skip_logout_consent,
    require_pushed_authorization_requests: c.require_pushed_authorization_requests,
    dpop_bound_access_tokens: c.dpop_bound_access_tokens,
    tls_client_auth_subject_dn: c.tls_client_auth_subject_dn,
    tls_client_auth_san_dns: c.tls_client_auth_san_dns,
    tls_client_auth_san_uri: c.tls_client_auth_san_uri,
    tls_client_auth_san_ip: c.tls_client_auth_san_ip,
    tls_client_auth_san_email: c.tls_client_auth_san_email,
    tls_client_certificate_bound_access_tokens: c.tls_client_certificate_bound_access_tokens,
    registration_access_token_signature: s.registrationSignature,
    dynamic_registration: s.dynamic ?? false,
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
  for (const f of LIFESPAN_FIELDS) row[f] = c[f];
  return row;
}

function fromRow(r: Row): StoredClient {
  const lifespans = Object.fromEntries(LIFESPAN_FIELDS.map((f) => [f, r[f] === null ? null : Number(r[f])]));
  return {
    secretHash: r.client_secret_hash,
    registrationSignature: r.registration_access_token_signature,
    dynamic: r.dynamic_registration,
    client: {
      client_id: r.id,
      client_name: r.client_name,
      redirect_uris: r.redirect_uris,
      grant_types: r.grant_types,
      response_types: r.response_types,
      scope: r.scope,
      audience: r.audience,
      owner: r.owner,
      policy_uri: r.policy_uri,
      tos_uri: r.tos_uri,
      client_uri: r.client_uri,
      logo_uri: r.logo_uri,
      contacts: r.contacts,
      allowed_cors_origins: r.allowed_cors_origins,
      subject_type: r.subject_type,
      sector_identifier_uri: r.sector_identifier_uri,
      jwks: r.jwks,
      jwks_uri: r.jwks_uri,
      token_endpoint_auth_method: r.token_endpoint_auth_method,
      token_endpoint_auth_signing_alg: r.token_endpoint_auth_signing_alg,
      request_uris: r.request_uris,
      request_object_signing_alg: r.request_object_signing_alg,
      userinfo_signed_response_alg: r.userinfo_signed_response_alg,
      frontchannel_logout_uri: r.frontchannel_logout_uri,
      frontchannel_logout_session_required: r.frontchannel_logout_session_required,
      backchannel_logout_uri: r.backchannel_logout_uri,
      backchannel_logout_session_required: r.backchannel_logout_session_required,
      post_logout_redirect_uris: r.post_logout_redirect_uris,
      metadata: r.metadata,
      access_token_strategy: r.access_token_strategy,
      skip_consent: r.skip_consent,
      skip_logout_consent: r.skip_logout_consent,
      require_pushed_authorization_requests: r.require_pushed_authorization_requests,
      dpop_bound_access_tokens: r.dpop_bound_access_tokens,
      tls_client_auth_subject_dn: r.tls_client_auth_subject_dn,
      tls_client_auth_san_dns: r.tls_client_auth_san_dns,
      tls_client_auth_san_uri: r.tls_client_auth_san_uri,
      tls_client_auth_san_ip: r.tls_client_auth_san_ip,
      tls_client_auth_san_email: r.tls_client_auth_san_email,
      tls_client_certificate_bound_access_tokens: r.tls_client_certificate_bound_access_tokens,
      created_at: r.created_at,
      updated_at: r.updated_at,
      ...(lifespans as Lifespans),
    },
  };
}

/** Inserts a client; a taken id is a 409 Conflict. */
export async function insertClient(db: Executor, s: StoredClient): Promise<void> {
  try {
    await db.insertInto('oauth2_clients').values(toRow(s)).execute();
  } catch (e) {
    throw mapDbError(e);
  }
}

export async function findClientById(
  db: Executor,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<StoredClient | undefined> {
  if (unstorable(id)) return undefined;
  let q = db.selectFrom('oauth2_clients').selectAll().where('nid', '=', DEFAULT_NID).where('id', '=', id);
  if (opts.forUpdate) q = q.forUpdate();
  const row = await q.executeTakeFirst();
  return row ? fromRow(row) : undefined;
}

/** Replaces every column of an existing client but its id and creation time; false when absent. */
export async function replaceClient(db: Executor, s: StoredClient): Promise<boolean> {
  const { nid: _n, id: _i, created_at: _c, ...values } = toRow(s);
  const r = await db
    .updateTable('oauth2_clients')
    .set(values)
    .where('nid', '=', DEFAULT_NID)
    .where('id', '=', s.client.client_id)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Swaps the secret hash when it is still `from` (a concurrent secret change wins); false otherwise. */
export async function replaceSecretHash(db: Executor, id: string, from: string, to: string) {
  const r = await db
    .updateTable('oauth2_clients')
    .set({ client_secret_hash: to })
    .where('nid', '=', DEFAULT_NID)
    .where('id', '=', id)
    .where('client_secret_hash', '=', from)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

export async function deleteClientById(db: Executor, id: string): Promise<boolean> {
  if (unstorable(id)) return false;
  const r = await db
    .deleteFrom('oauth2_clients')
    .where('nid', '=', DEFAULT_NID)
    .where('id', '=', id)
    .executeTakeFirst();
  return r.numDeletedRows > 0n;
}

export interface ClientListQuery {
  /** Rows to fetch (callers ask for one more than the page to learn whether a next page exists). */
  limit: number;
  afterId: string | undefined;
  clientName: string | undefined;
  owner: string | undefined;
}

/** Keyset page ordered by id (byte order, the column's "C" collation). */
export async function listClients(db: Executor, q: ClientListQuery): Promise<StoredClient[]> {
  if (unstorable(q.clientName, q.owner, q.afterId)) return [];
  let sel = db.selectFrom('oauth2_clients').selectAll().where('nid', '=', DEFAULT_NID);
  if (q.clientName) sel = sel.where('client_name', '=', q.clientName);
  if (q.owner) sel = sel.where('owner', '=', q.owner);
  if (q.afterId !== undefined) sel = sel.where('id', '>', q.afterId);
  const rows = await sel.orderBy('id').limit(q.limit).execute();
  return rows.map(fromRow);
}
