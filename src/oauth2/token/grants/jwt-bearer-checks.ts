/**
 * The assertion checks of the RFC 7523 JWT bearer grant, in Hydra's order: parse, `iss`/`sub`, key lookup among the trusted issuers, signature, `aud` (one of
 * the token URLs — the internal public one and, with a custom-domain issuer, the one derived from
 * the issuer), `exp`/`nbf`/`iat`, maximum lifetime and `jti`.
 */
import { createHash } from 'node:crypto';
import { compactVerify, decodeJwt, decodeProtectedHeader, importJWK } from 'jose';
import type { OAuth2Config } from '../../deps.ts';
import { oauth2Error } from '../../oauth-errors.ts';
import { isJtiKnown } from '../../store/tokens.ts';
import type { TrustKey } from '../../trust/service.ts';
import type { GrantDeps } from './deps.ts';

/** Asymmetric JWS algorithms only: a trusted key is a public key. */
const ALGS = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']);

export interface AssertionClaims {
  iss: string;
  sub: string;
  aud: string[];
  exp: number;
  jti: string;
}

const grantError = (hint: string) => oauth2Error('invalid_grant', { hint });
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const rfc3339 = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Steps 2 and 3: a JWS whose unverified claims name an issuer and a subject. */
export function parseAssertion(assertion: string): {
  header: { alg?: string; kid?: string };
  claims: Record<string, unknown>;
} {
  let header: { alg?: string; kid?: string };
  let claims: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(assertion);
    claims = decodeJwt(assertion) as Record<string, unknown>;
  } catch (e) {
    throw oauth2Error('invalid_grant', {
      hint: 'Unable to parse JSON Web Token passed in "assertion" request parameter.',
      debug: (e as Error).message,
    });
  }
  if (typeof claims.iss !== 'string' || !claims.iss) {
    throw grantError('The JWT in "assertion" request parameter MUST contain an "iss" (issuer) claim.');
  }
  if (typeof claims.sub !== 'string' || !claims.sub) {
    throw grantError('The JWT in "assertion" request parameter MUST contain a "sub" (subject) claim.');
  }
  return { header, claims };
}

async function verifiesWith(assertion: string, alg: string | undefined, k: TrustKey): Promise<boolean> {
  if (!alg || !ALGS.has(alg) || (k.jwk.alg && k.jwk.alg !== alg)) return false;
  try {
    await compactVerify(assertion, await importJWK({ ...k.jwk, alg } as never, alg));
    return true;
  } catch {
    return false;
  }
}

/** Steps 4 and 5: the trusted key (by header `kid`, else every unexpired key of iss/sub) and the signature. */
export async function verifyAssertion(
  d: GrantDeps,
  assertion: string,
  header: { alg?: string; kid?: string },
  iss: string,
  sub: string,
): Promise<TrustKey> {
  const notFound = () =>
    grantError(
      `No public JWK was registered for issuer "${iss}" and subject "${sub}", and public key is required to check signature of JWT in "assertion" request parameter.`,
    );
  const kid = typeof header.kid === 'string' && header.kid ? header.kid : undefined;
  const keys = await d.trust.keysFor(iss, sub, kid);
  if (kid) {
    const key = keys[0];
    if (!key) throw notFound();
    if (!(await verifiesWith(assertion, header.alg, key))) {
      throw grantError("Unable to verify the integrity of the 'assertion' value.");
    }
    return key;
  }
  for (const key of keys) if (await verifiesWith(assertion, header.alg, key)) return key;
  throw notFound();
}

/** Steps 6 to 9, on the verified claims. */
export async function checkAssertionClaims(d: GrantDeps, claims: Record<string, unknown>): Promise<AssertionClaims> {
  const cfg: OAuth2Config['oauth2']['grant']['jwt'] = d.config.oauth2.grant.jwt;
  const now = d.clock.now().getTime();
  const raw = claims.aud;
  const aud = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((a) => typeof a === 'string');
  if (!aud.length) {
    throw grantError('The JWT in "assertion" request parameter MUST contain an "aud" (audience) claim.');
  }
  if (!d.tokenUrls.some((u) => aud.includes(u))) {
    throw grantError(
      `The JWT in "assertion" request parameter MUST contain an "aud" (audience) claim containing a value "${d.tokenUrls.join('" or "')}" that identifies the authorization server as an intended audience.`,
    );
  }
  const exp = num(claims.exp);
  if (exp === undefined) {
    throw grantError('The JWT in "assertion" request parameter MUST contain an "exp" (expiration time) claim.');
  }
  if (exp * 1000 < now) throw grantError('The JWT in "assertion" request parameter expired.');
  const nbf = num(claims.nbf);
  if (nbf !== undefined && !(nbf * 1000 < now)) {
    throw grantError(
      `The JWT in "assertion" request parameter contains an "nbf" (not before) claim, that identifies the time '${rfc3339(nbf)}' before which the token MUST NOT be accepted.`,
    );
  }
  const iat = num(claims.iat);
  if (iat === undefined && !cfg.iat_optional) {
    throw grantError('The JWT in "assertion" request parameter MUST contain an "iat" (issued at) claim.');
  }
  const issued = iat !== undefined ? iat * 1000 : now;
  if (exp * 1000 - issued > cfg.max_ttl) {
    throw grantError(
      `The JWT in "assertion" request parameter contains an "exp" (expiration time) claim with value "${rfc3339(exp)}" that is unreasonably far in the future, considering token issued at "${rfc3339(Math.floor(issued / 1000))}".`,
    );
  }
  const jti = typeof claims.jti === 'string' ? claims.jti : '';
  if (!jti && !cfg.jti_optional) {
    throw grantError('The JWT in "assertion" request parameter MUST contain an "jti" (JWT ID) claim.');
  }
  if (jti && (await isJtiKnown(d.db, jtiHash(jti), d.clock.now()))) throw oauth2Error('jti_known');
  return { iss: claims.iss as string, sub: claims.sub as string, aud, exp, jti };
}

/** The blacklist key of a `jti` (shared with client assertions). */
export const jtiHash = (jti: string) => createHash('sha256').update(jti).digest('hex');
