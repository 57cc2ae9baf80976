/**
 * Claims of JWT access tokens (RFC 9068, as Hydra issues them), in one place: iss, sub, aud, exp, iat, nbf, jti,
 * client_id, scp/scope per `strategies.jwt.scope_claim`, and the consent's `session.access_token`
 * claims under the three rules:
 * - keys in `oauth2.allowed_top_level_claims` (reserved names excluded) are copied to the top level;
 * - `oauth2.mirror_top_level_claims` (default on): `ext` holds all custom claims;
 * - mirroring off: `ext` holds only the non-promoted claims, and only with `oauth2.preserve_ext_claims`;
 *   otherwise they are dropped.
 */
import { randomUUID } from 'node:crypto';
import type { OAuth2Config } from '../deps.ts';
import type { Grant } from './grant.ts';
import { confirmationClaim } from './session.ts';

/**
 * Claims that consent session data (or a token hook) can never set at the top level, whatever
 * `oauth2.allowed_top_level_claims` lists: RFC 7519 §4.1, RFC 9068 §2.2 (`client_id`, `scope`,
 * `auth_time`, `acr`, `amr`), RFC 8693 §4 (`act`, `may_act`), RFC 7800 (`cnf`) and gatehouse's own
 * (`scp`, `ext`, `azp`, `sid`, the stateless marker). A custom `scope` must not widen what the
 * resource server believes was granted, even when the scope claim is `scp` only.
 */
export const RESERVED_AT_CLAIMS = new Set([
  'iss',
  'sub',
  'aud',
  'exp',
  'nbf',
  'iat',
  'jti',
  'client_id',
  'scp',
  'scope',
  'ext',
  'azp',
  'auth_time',
  'acr',
  'amr',
  'sid',
  'act',
  'may_act',
  'cnf',
  'token_use',
]);

/** The custom-claim part (top-level promotions plus `ext`) of a JWT access token. */
export function customAccessTokenClaims(
  opts: { allowedTopLevel: readonly string[]; mirror: boolean; preserveExt: boolean; reserved?: readonly string[] },
  ext: Record<string, unknown>,
): Record<string, unknown> {
  const allowed = opts.allowedTopLevel.filter((c) => !RESERVED_AT_CLAIMS.has(c) && !opts.reserved?.includes(c));
  const out: Record<string, unknown> = {};
  for (const c of allowed) if (Object.hasOwn(ext, c)) out[c] = ext[c];
  if (opts.mirror) out.ext = ext;
  else if (opts.preserveExt) {
    const rest = Object.fromEntries(Object.entries(ext).filter(([k]) => !allowed.includes(k)));
    if (Object.keys(rest).length) out.ext = rest;
  }
  return out;
}

export function accessTokenClaims(
  config: OAuth2Config,
  grant: Grant,
  now: Date,
  expiresAt: Date,
): Record<string, unknown> {
  const iat = Math.floor(now.getTime() / 1000);
  const claims: Record<string, unknown> = {
    ...customAccessTokenClaims(
      {
        allowedTopLevel: config.oauth2.allowed_top_level_claims,
        mirror: config.oauth2.mirror_top_level_claims,
        preserveExt: config.oauth2.preserve_ext_claims,
        reserved: [config.strategies.jwt.stateless.claim_name],
      },
      grant.session.ext,
    ),
    iss: config.urls.self.issuer,
    sub: grant.session.subject,
    aud: grant.grantedAudience,
    exp: Math.floor(expiresAt.getTime() / 1000),
    iat,
    jti: randomUUID(),
    client_id: grant.client.id,
  };
  if (!config.oauth2.exclude_not_before_claim) claims.nbf = iat;
  // RFC 9449 §6.1, RFC 8705 §3.1: a bound token names its key or certificate.
  const cnf = confirmationClaim(grant.session.cnf);
  if (cnf) claims.cnf = cnf;
  // RFC 8693 §4.1: a delegated token names its actor.
  if (grant.session.act) claims.act = grant.session.act;
  const mode = config.strategies.jwt.scope_claim;
  if (mode === 'list' || mode === 'both') claims.scp = grant.grantedScope;
  if (mode === 'string' || mode === 'both') claims.scope = grant.grantedScope.join(' ');
  return claims;
}
