/**
 * The Hydra `OAuth2Client` JSON ⇄ the client record. Decoding follows Go's `encoding/json` into
 * Hydra's struct: unknown keys are ignored, `null` leaves a field empty, a value of the wrong type
 * is a 400 "Unable to decode the request body". Rendering follows the struct's field order and
 * `omitempty` tags, so bodies compare equal to Hydra's snapshots.
 */
import { z } from 'zod';
import { formatDuration, parseGoDuration } from '../../core/config/duration.ts';
import { AppError, HERODOT } from '../../core/errors.ts';
import {
  type Client,
  type ClientDraft,
  type ClientJwks,
  LIFESPAN_FIELDS,
  type LifespanField,
  type Lifespans,
  TLS_CLIENT_AUTH_FIELDS,
} from './model.ts';

const str = z
  .string()
  .nullish()
  .transform((v) => v ?? '');
const list = z.array(z.string()).nullish();
const listOrNull = list.transform((v) => v ?? null);
const listOrEmpty = list.transform((v) => v ?? []);
const flag = z
  .boolean()
  .nullish()
  .transform((v) => v ?? false);
const lifespan = z
  .string()
  .nullish()
  .transform((v, ctx) => {
    if (v == null) return null;
    const ms = parseGoDuration(v);
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `time: invalid duration ${JSON.stringify(v)}` });
      return z.NEVER;
    }
    return ms;
  });

const jwks = z
  .looseObject({ keys: z.array(z.record(z.string(), z.unknown())).nullish() })
  .nullish()
  .transform((v): ClientJwks => {
    if (!v) return {};
    const { keys, ...rest } = v;
    return keys ? { ...rest, keys } : rest;
  });

const lifespanShape = Object.fromEntries(LIFESPAN_FIELDS.map((f) => [f, lifespan])) as Record<
  LifespanField,
  typeof lifespan
>;

/** A client write body (POST, PUT, the result of a PATCH, dynamic registration). */
/** Hydra's `hydra_client.id` is a VARCHAR(255). */
const MAX_ID_LENGTH = 255;

export const clientBody = z.object({
  client_id: z
    .string()
    .max(MAX_ID_LENGTH, `client_id must be at most ${MAX_ID_LENGTH} characters`)
    .nullish()
    .transform((v) => v ?? ''),
  client_name: str,
  client_secret: str,
  redirect_uris: listOrNull,
  grant_types: listOrNull,
  response_types: listOrNull,
  scope: str,
  audience: listOrEmpty,
  owner: str,
  policy_uri: str,
  allowed_cors_origins: listOrEmpty,
  tos_uri: str,
  client_uri: str,
  logo_uri: str,
  contacts: listOrNull,
  client_secret_expires_at: z.number().nullish(),
  subject_type: str,
  sector_identifier_uri: str,
  jwks_uri: str,
  jwks,
  token_endpoint_auth_method: str,
  token_endpoint_auth_signing_alg: str,
  request_uris: listOrEmpty,
  request_object_signing_alg: str,
  userinfo_signed_response_alg: str,
  frontchannel_logout_uri: str,
  frontchannel_logout_session_required: flag,
  post_logout_redirect_uris: listOrEmpty,
  backchannel_logout_uri: str,
  backchannel_logout_session_required: flag,
  metadata: z.unknown().optional(),
  access_token_strategy: str,
  skip_consent: flag,
  skip_logout_consent: z
    .boolean()
    .nullish()
    .transform((v) => v ?? null),
  require_pushed_authorization_requests: flag,
  dpop_bound_access_tokens: flag,
  tls_client_auth_subject_dn: str,
  tls_client_auth_san_dns: str,
  tls_client_auth_san_uri: str,
  tls_client_auth_san_ip: str,
  tls_client_auth_san_email: str,
  tls_client_certificate_bound_access_tokens: flag,
  ...lifespanShape,
});

/** The `/lifespans` body: the 13 fields, omitted ones become null. */
export const lifespansBody = z.object(lifespanShape);

function describe(issue: z.core.$ZodIssue): string {
  const field = issue.path.length ? `field ${issue.path.map(String).join('.')}: ` : '';
  return `${field}${issue.message}`;
}

const undecodable = (reason: string) =>
  new AppError({ status: 400, code: HERODOT.badRequest, description: `Unable to decode the request body: ${reason}` });

/** Deeper JSON than this (metadata, jwks) is refused before PostgreSQL's jsonb parser would choke on it. */
const MAX_DEPTH = 32;

/** What PostgreSQL cannot store (text and jsonb refuse U+0000) must be a 400, not a database error. */
function assertStorable(v: unknown, depth = 0): void {
  if (typeof v === 'string') {
    if (v.includes('\u0000')) throw undecodable('strings must not contain the character U+0000');
    return;
  }
  if (v === null || typeof v !== 'object') return;
  if (depth >= MAX_DEPTH) throw undecodable(`JSON nested deeper than ${MAX_DEPTH} levels`);
  for (const [k, x] of Object.entries(v)) {
    assertStorable(k, depth + 1);
    assertStorable(x, depth + 1);
  }
}

/** Parses a JSON body as Hydra's json.Decoder would, throwing Hydra's 400 on a type mismatch. */
export function decodeBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw undecodable('the body must be a JSON object');
  }
  assertStorable(body);
  const r = schema.safeParse(body);
  if (!r.success) throw undecodable(describe(r.error.issues[0] as z.core.$ZodIssue));
  return r.data;
}

export function toDraft(body: z.output<typeof clientBody>): ClientDraft {
  const { client_secret_expires_at: _ignored, metadata, ...rest } = body;
  return { ...rest, metadata };
}

export function toLifespans(body: z.output<typeof lifespansBody>): Lifespans {
  return Object.fromEntries(LIFESPAN_FIELDS.map((f) => [f, body[f] ?? null])) as Lifespans;
}

/** Extra output-only members of a write response. */
export interface RenderExtras {
  client_secret?: string | undefined;
  registration_access_token?: string | undefined;
  registration_client_uri?: string | undefined;
  /** Dynamic registration GET hides the admin-only metadata. */
  hideMetadata?: boolean;
}

const rfc3339 = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
const omitEmpty = (o: Record<string, unknown>, key: string, v: string | boolean | string[] | undefined) => {
  if (v === undefined || v === '' || v === false || (Array.isArray(v) && v.length === 0)) return;
  o[key] = v;
};

/** The wire `OAuth2Client`, in Hydra's field order, with its omitempty rules. */
export function renderClient(c: Client, x: RenderExtras = {}): Record<string, unknown> {
  const o: Record<string, unknown> = { client_id: c.client_id, client_name: c.client_name };
  omitEmpty(o, 'client_secret', x.client_secret);
  Object.assign(o, {
    redirect_uris: c.redirect_uris,
    grant_types: c.grant_types,
    response_types: c.response_types,
    scope: c.scope,
    audience: c.audience,
    owner: c.owner,
    policy_uri: c.policy_uri,
    allowed_cors_origins: c.allowed_cors_origins,
    tos_uri: c.tos_uri,
    client_uri: c.client_uri,
    logo_uri: c.logo_uri,
    contacts: c.contacts,
    client_secret_expires_at: 0,
    subject_type: c.subject_type,
  });
  omitEmpty(o, 'sector_identifier_uri', c.sector_identifier_uri);
  omitEmpty(o, 'jwks_uri', c.jwks_uri);
  o.jwks = c.jwks;
  omitEmpty(o, 'token_endpoint_auth_method', c.token_endpoint_auth_method);
  omitEmpty(o, 'token_endpoint_auth_signing_alg', c.token_endpoint_auth_signing_alg);
  omitEmpty(o, 'request_uris', c.request_uris);
  omitEmpty(o, 'request_object_signing_alg', c.request_object_signing_alg);
  omitEmpty(o, 'userinfo_signed_response_alg', c.userinfo_signed_response_alg);
  o.created_at = rfc3339(c.created_at);
  o.updated_at = rfc3339(c.updated_at);
  omitEmpty(o, 'frontchannel_logout_uri', c.frontchannel_logout_uri);
  omitEmpty(o, 'frontchannel_logout_session_required', c.frontchannel_logout_session_required);
  omitEmpty(o, 'post_logout_redirect_uris', c.post_logout_redirect_uris);
  omitEmpty(o, 'backchannel_logout_uri', c.backchannel_logout_uri);
  omitEmpty(o, 'backchannel_logout_session_required', c.backchannel_logout_session_required);
  if (!x.hideMetadata) o.metadata = c.metadata ?? {};
  omitEmpty(o, 'registration_access_token', x.registration_access_token);
  omitEmpty(o, 'registration_client_uri', x.registration_client_uri);
  omitEmpty(o, 'access_token_strategy', c.access_token_strategy);
  o.skip_consent = c.skip_consent;
  o.skip_logout_consent = c.skip_logout_consent;
  // Not Hydra fields (RFC 9126 §6, RFC 9449 §5.2): shown only when set, so that Hydra's clients read unchanged.
  if (c.require_pushed_authorization_requests) o.require_pushed_authorization_requests = true;
  if (c.dpop_bound_access_tokens) o.dpop_bound_access_tokens = true;
  // RFC 8705 §2.1.2, §3.4: likewise.
  for (const f of TLS_CLIENT_AUTH_FIELDS) omitEmpty(o, f, c[f]);
  if (c.tls_client_certificate_bound_access_tokens) o.tls_client_certificate_bound_access_tokens = true;
  for (const f of LIFESPAN_FIELDS) {
    const v = c[f];
    o[f] = v === null ? null : formatDuration(v);
  }
  return o;
}
