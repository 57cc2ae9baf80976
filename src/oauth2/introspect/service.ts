/**
 * RFC 7662 token introspection on the admin API (Hydra's introspectOAuth2Token). An
 * unknown, expired, revoked or used (outside the grace rules) token, or one that lacks a requested
 * `scope`, is `{"active":false}`. Custom claims (`session.access_token`) follow the same rules as in
 * JWT access tokens (see token/jwt-claims.ts): `oauth2.allowed_top_level_claims` are promoted to the top
 * level (never over a standard field), and `ext` holds all of them (`mirror_top_level_claims`), the
 * non-promoted ones (`preserve_ext_claims`), or is left out.
 */
import type { Clock } from '../../core/clock.ts';
import type { OAuth2Config } from '../deps.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { coversScopes, scopeStrategy, splitSpaces } from '../scope.ts';
import type { SessionCodec } from '../session-data.ts';
import { customAccessTokenClaims } from '../token/jwt-claims.ts';
import type { FoundToken, TokenLookup } from '../token/lookup.ts';
import { gracePolicyOf, refreshTokenUsable } from '../token/rotation.ts';
import { confirmationClaim, type GrantSession } from '../token/session.ts';
import { assertStatefulTokens } from '../token/stateless.ts';

export interface IntrospectionDeps {
  config: OAuth2Config;
  clock: Clock;
  lookup: TokenLookup;
  sessions: SessionCodec;
}

type Introspection = Record<string, unknown> & { active: boolean };

const INACTIVE = JSON.stringify({ active: false });

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

export function createIntrospectionService(d: IntrospectionDeps) {
  const strategy = scopeStrategy(d.config.strategies.scope);
  const claimRules = {
    allowedTopLevel: d.config.oauth2.allowed_top_level_claims,
    mirror: d.config.oauth2.mirror_top_level_claims,
    preserveExt: d.config.oauth2.preserve_ext_claims,
  };

  function isActive(t: FoundToken, now: Date): boolean {
    const { row } = t;
    if (row.expiresAt && row.expiresAt.getTime() <= now.getTime()) return false;
    return t.use === 'access_token' || refreshTokenUsable(t.row, now, gracePolicyOf(d.config));
  }

  /**
   * The active answer (as JSON) depends only on the row and the configuration: kept per row
   * object, so a row the lookup answers from memory is not decrypted, rendered and serialised
   * again (rows read from the database are new objects; a dropped row takes its entry with it).
   */
  const rendered = new WeakMap<object, string>();

  function render(t: FoundToken): string {
    let out = rendered.get(t.row);
    if (out === undefined) {
      out = JSON.stringify(build(t));
      rendered.set(t.row, out);
    }
    return out;
  }

  function build(t: FoundToken): Introspection {
    const { row } = t;
    const session = d.sessions.open<GrantSession>(row.sessionData);
    const standard: Introspection = { active: true };
    if (row.grantedScope.length) standard.scope = row.grantedScope.join(' ');
    standard.client_id = row.clientId;
    standard.sub = row.subject;
    if (session.idToken.sub && session.idToken.sub !== row.subject) standard.obfuscated_subject = session.idToken.sub;
    if (row.expiresAt) standard.exp = unix(row.expiresAt);
    standard.iat = unix(row.requestedAt);
    standard.nbf = unix(row.requestedAt);
    standard.aud = row.grantedAudience;
    standard.iss = d.config.urls.self.issuer;
    // RFC 9449 §6.2: a DPoP-bound token says so and names its key; RFC 8705 §3.2: a
    // certificate-bound one (still a Bearer token) names its certificate's thumbprint.
    standard.token_type = session.cnf?.jkt ? 'DPoP' : 'Bearer';
    standard.token_use = t.use;
    const cnf = confirmationClaim(session.cnf);
    if (cnf) standard.cnf = cnf;
    if (session.act) standard.act = session.act;
    const { ext, ...promoted } = customAccessTokenClaims(claimRules, session.ext ?? {});
    const out: Introspection = { ...standard };
    for (const [k, v] of Object.entries(promoted)) if (!(k in standard) && k !== 'username') out[k] = v;
    if (ext && Object.keys(ext as object).length) out.ext = ext;
    return out;
  }

  return {
    /**
     * The RFC 7662 response body (JSON).
     * @throws 501 with stateless JWT access tokens; 400 `invalid_request` for an empty body.
     */
    async introspect(form: Record<string, string>): Promise<string> {
      assertStatefulTokens(d.config, 'introspection');
      if (!Object.keys(form).length) throw oauth2Error('invalid_request', { hint: 'The POST body can not be empty.' });
      const found = await d.lookup.find(form.token ?? '', form.token_type_hint === 'refresh_token', { cached: true });
      const now = d.clock.now();
      if (!found || !isActive(found, now)) return INACTIVE;
      if (!coversScopes(strategy, found.row.grantedScope, splitSpaces(form.scope))) return INACTIVE;
      return render(found);
    },
  };
}

export type IntrospectionService = ReturnType<typeof createIntrospectionService>;
