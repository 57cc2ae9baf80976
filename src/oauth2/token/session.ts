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

/** RFC 7800 §3.1 confirmation members of a sender-constrained token. */
export interface Confirmation {
  /** RFC 9449 §6: the DPoP key's RFC 7638 thumbprint. */
  jkt?: string;
  /** RFC 8705 §3.1: base64url(SHA-256(DER)) of the client certificate. */
  'x5t#S256'?: string;
}

/** The `cnf` claim of a bound token (JWT access tokens, introspection): the members set, nothing else. */
export function confirmationClaim(cnf: Confirmation | undefined): Confirmation | undefined {
  if (!cnf) return undefined;
  const out: Confirmation = {};
  if (cnf.jkt) out.jkt = cnf.jkt;
  if (cnf['x5t#S256']) out['x5t#S256'] = cnf['x5t#S256'];
  return out.jkt || out['x5t#S256'] ? out : undefined;
}

export interface GrantSession {
  /** The real subject (introspection `sub`). */
  subject: string;
  idToken: IdTokenBase;
  /** `session.access_token` of the consent (JWT `ext`, introspection `ext`). */
  ext: Record<string, unknown>;
  /**
   * What a token is bound to (RFC 7800 `cnf`), set per token by the issuer: a DPoP key (RFC 9449
   * `jkt`: an access token issued on a proof, a public client's refresh token, a code by
   * `dpop_jkt` §10) and/or a client certificate (RFC 8705 §3.1 `x5t#S256`: an access token of a
   * client registered with `tls_client_certificate_bound_access_tokens`, and, §4, a public such
   * client's refresh token).
   */
  cnf?: Confirmation;
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
