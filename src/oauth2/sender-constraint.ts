/**
 * Access tokens as the endpoints that accept them (`/userinfo`, `/credentials`) receive them, and
 * their sender constraints:
 * - DPoP (RFC 9449 §7): a bound token (`cnf.jkt` in its grant session) is good only with the `DPoP`
 *   scheme and a proof of its key for this request (`htm`, `htu`, `ath`); an unbound one only as a
 *   bearer token. Refusals are 401 with a `WWW-Authenticate: DPoP` challenge (`invalid_token`,
 *   `invalid_dpop_proof`, or `use_dpop_nonce` with the nonce to use).
 * - Mutual TLS (RFC 8705 §3): a certificate-bound token (`cnf.x5t#S256`) is good only over a
 *   connection presenting that certificate; otherwise 401 `invalid_token` with a `Bearer` challenge.
 *   The certificate is read only for such a token.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { AppError } from '../core/errors.ts';
import { bearerToken, firstValue } from '../core/http/params.ts';
import type { OAuth2Config } from './deps.ts';
import type { Dpop, VerifiedProof } from './dpop.ts';
import type { CertificateSource, ClientCertificates } from './mtls.ts';
import { OAUTH2_FAMILY } from './oauth-errors.ts';
import type { GrantSession } from './token/session.ts';

const sameText = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

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
  /** The request's client certificate (RFC 8705), read only for a certificate-bound token. */
  certificate: CertificateSource;
}

/**
 * RFC 6750 §2: the Authorization header, else an `access_token` form or query parameter (when
 * `parameters`); RFC 9449 §7.1: `Authorization: DPoP <token>` with the proof in the `DPoP` header.
 */
export function presentedToken(ctx: Context, certificates: ClientCertificates, parameters = true): PresentedToken {
  const authorization = ctx.get('authorization');
  const url = `${ctx.protocol}://${ctx.host}${ctx.path}`;
  const certificate = certificates.of(ctx);
  const dpop = /^DPoP\s+(.+)$/i.exec(authorization);
  if (dpop) {
    const proof = ctx.get('dpop') || undefined;
    return {
      token: (dpop[1] as string).trim(),
      scheme: 'DPoP',
      htm: ctx.method,
      url,
      certificate,
      ...(proof ? { proof } : {}),
    };
  }
  const bearer = bearerToken(authorization);
  const body = ctx.request.body as Record<string, unknown> | undefined;
  const token =
    bearer ??
    (parameters ? firstValue(body?.access_token) || firstValue(ctx.query.access_token) || undefined : undefined);
  return { token, scheme: 'Bearer', htm: ctx.method, url, certificate };
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

  // RFC 8705 §3 / RFC 6750 §3.1: a certificate-bound token presented without its certificate.
  const certificateRefusal = (hint: string) =>
    new AppError({
      status: 401,
      code: 'invalid_token',
      description: 'The access token is not valid for this request.',
      hint,
      family: OAUTH2_FAMILY,
      headers: { 'WWW-Authenticate': `Bearer error="invalid_token", error_description="${hint.replaceAll('"', "'")}"` },
    });

  return async (session, p, urls) => {
    const cnf = session.cnf;
    if (!cnf) {
      if (p.scheme === 'DPoP') throw refusal('invalid_token', 'The access token is not DPoP-bound.');
      return;
    }
    const x5t = cnf['x5t#S256'];
    if (x5t !== undefined) {
      const cert = p.certificate();
      // Thumbprints are not secrets, but comparing in constant time costs nothing here.
      if (!cert || !sameText(cert.thumbprint, x5t))
        throw certificateRefusal(
          cert
            ? 'The access token is bound to another TLS client certificate.'
            : 'The access token is certificate-bound: present it over a connection with its TLS client certificate.',
        );
    }
    if (cnf.jkt === undefined) {
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
    if (proof?.jkt !== cnf.jkt)
      throw refusal('invalid_dpop_proof', "The DPoP proof's key is not the one the access token is bound to.");
  };
}
