/**
 * The grant session: what a code, access token or refresh token carries besides its row columns.
 * It is written once when the consent is handled and copied to every token of the grant family, so
 * userinfo, introspection and refreshes see the claims recorded at consent time.
 */

/** ID token claims recorded at consent time (no exp/iat/jti/hashes: those are per token). */
export interface IdTokenBase {
  iss: string;
  /** Public or pairwise subject, as the client sees it. */
  sub: string;
  aud: string[];
  /** unix seconds */
  auth_time: number;
  /** unix seconds: when the authorization request was made */
  rat: number;
  acr?: string;
  amr?: string[];
  sid?: string;
  nonce?: string;
  /** `session.id_token` of the consent; standard claims win over these. */
  extra: Record<string, unknown>;
}

export interface GrantSession {
  /** The real subject (introspection `sub`). */
  subject: string;
  idToken: IdTokenBase;
  /** `session.access_token` of the consent (JWT `ext`, introspection `ext`). */
  ext: Record<string, unknown>;
  /**
   * The key a token is bound to (RFC 9449 `cnf.jkt`): set per token by the issuer (an access token
   * issued on a DPoP proof; a public client's refresh token), or on a code by `dpop_jkt` (§10).
   */
  cnf?: { jkt: string };
  /** RFC 8693 §4.1: the actor of a delegated token (earlier actors nested in its `act`). */
  act?: Record<string, unknown>;
  /** The machine grant the token was issued by (`client_credentials`, `jwt_bearer`); absent for user grants. */
  machine?: 'client_credentials' | 'jwt_bearer';
}

/** Keys a consent's `session.id_token` cannot override. */
export const RESERVED_ID_TOKEN_CLAIMS = [
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'rat',
  'auth_time',
  'nonce',
  'at_hash',
  'c_hash',
  'acr',
  'amr',
  'sid',
  'jti',
] as const;

/** The ID token claim set of a session (custom claims first, standard claims win). */
export function idTokenClaims(base: IdTokenBase): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base.extra };
  for (const k of RESERVED_ID_TOKEN_CLAIMS) delete out[k];
  out.iss = base.iss;
  out.sub = base.sub;
  out.aud = base.aud;
  out.auth_time = base.auth_time;
  out.rat = base.rat;
  if (base.acr) out.acr = base.acr;
  if (base.amr?.length) out.amr = base.amr;
  if (base.sid) out.sid = base.sid;
  if (base.nonce) out.nonce = base.nonce;
  return out;
}
