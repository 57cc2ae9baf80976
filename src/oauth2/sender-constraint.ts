/**
 * Access tokens as the endpoints that accept them (`/userinfo`, `/credentials`) receive them, and
 * the DPoP sender constraint (RFC 9449 §7): a bound token (`cnf.jkt` in its grant session) is good
 * only with the `DPoP` scheme and a proof of its key for this request (`htm`, `htu`, `ath`); an
 * unbound one only as a bearer token. Refusals are 401 with a `WWW-Authenticate: DPoP` challenge
 * (`invalid_token`, `invalid_dpop_proof`, or `use_dpop_nonce` with the nonce to use).
 */
import type { Context } from 'koa';
import { AppError } from '../core/errors.ts';
import { bearerToken, firstValue } from '../core/http/params.ts';
import type { OAuth2Config } from './deps.ts';
import type { Dpop, VerifiedProof } from './dpop.ts';
import { OAUTH2_FAMILY } from './oauth-errors.ts';
import type { GrantSession } from './token/session.ts';

/** An access token as a request presented it. */
export interface PresentedToken {
  token: string | undefined;
  /** `DPoP` for `Authorization: DPoP …`, else `Bearer` (the header, or a form or query parameter). */
  scheme: 'Bearer' | 'DPoP';
  /** The `DPoP` header. */
  proof?: string;
  /** The request's method and URL (without query), for the proof's `htm` and `htu`. */
  htm: string;
  url: string;
}

/**
 * RFC 6750 §2: the Authorization header, else an `access_token` form or query parameter (when
 * `parameters`); RFC 9449 §7.1: `Authorization: DPoP <token>` with the proof in the `DPoP` header.
 */
export function presentedToken(ctx: Context, parameters = true): PresentedToken {
  const authorization = ctx.get('authorization');
  const url = `${ctx.protocol}://${ctx.host}${ctx.path}`;
  const dpop = /^DPoP\s+(.+)$/i.exec(authorization);
  if (dpop) {
    const proof = ctx.get('dpop') || undefined;
    return { token: (dpop[1] as string).trim(), scheme: 'DPoP', htm: ctx.method, url, ...(proof ? { proof } : {}) };
  }
  const bearer = bearerToken(authorization);
  const body = ctx.request.body as Record<string, unknown> | undefined;
  const token =
    bearer ??
    (parameters ? firstValue(body?.access_token) || firstValue(ctx.query.access_token) || undefined : undefined);
  return { token, scheme: 'Bearer', htm: ctx.method, url };
}

/** The check of a presented token against its grant session, for an endpoint at `urls`. */
export type SenderConstraint = (session: GrantSession, p: PresentedToken, urls: readonly string[]) => Promise<void>;

export function createSenderConstraint(d: { config: OAuth2Config; dpop: Dpop }): SenderConstraint {
  const challenge = (code: string, description: string) =>
    `DPoP algs="${d.config.oauth2.dpop.signing_algs.join(' ')}", error="${code}", error_description="${description.replaceAll('"', "'")}"`;
  const refusal = (code: 'invalid_token' | 'invalid_dpop_proof' | 'use_dpop_nonce', hint: string, extra = {}) =>
    new AppError({
      status: 401,
      code,
      description:
        code === 'invalid_token' ? 'The access token is not valid for this request.' : 'The DPoP proof is invalid.',
      hint,
      family: OAUTH2_FAMILY,
      headers: { ...extra, 'WWW-Authenticate': challenge(code, hint) },
    });

  return async (session, p, urls) => {
    if (!session.cnf) {
      if (p.scheme === 'DPoP') throw refusal('invalid_token', 'The access token is not DPoP-bound.');
      return;
    }
    if (p.scheme !== 'DPoP')
      throw refusal('invalid_token', 'The access token is DPoP-bound: present it with the DPoP scheme and a proof.');
    if (!p.proof) throw refusal('invalid_dpop_proof', 'A DPoP proof is required with a DPoP-bound access token.');
    let proof: VerifiedProof | undefined;
    try {
      proof = await d.dpop.verify(p.proof, { htm: p.htm, htu: [...urls, p.url], accessToken: p.token ?? '' });
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      if (e.code === 'use_dpop_nonce') throw refusal('use_dpop_nonce', e.hint ?? e.description, e.headers);
      throw refusal('invalid_dpop_proof', e.hint || e.description);
    }
    if (proof?.jkt !== session.cnf.jkt)
      throw refusal('invalid_dpop_proof', "The DPoP proof's key is not the one the access token is bound to.");
  };
}
