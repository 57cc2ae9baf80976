/**
 * What a token request proved possession of, and what its access token is bound to (RFC 7800
 * `cnf`): the key of its DPoP proof (RFC 9449 §6, `jkt`), and the client certificate of a client
 * registered with `tls_client_certificate_bound_access_tokens` (RFC 8705 §3, `x5t#S256`). Both may
 * hold at once; a resource then checks both.
 */
import type { VerifiedProof } from '../dpop.ts';
import type { CertificateSource } from '../mtls.ts';
import { oauth2Error } from '../oauth-errors.ts';
import type { FlowClient } from '../ports.ts';
import type { Confirmation } from './session.ts';

export interface Possession {
  /** The request's DPoP proof, checked. */
  proof?: VerifiedProof;
  /** The request's client certificate, read on first use (most requests never read it). */
  certificate: CertificateSource;
}

/** The Grant fields of a request: its access token is bound to what it proved. */
export function boundTo(client: FlowClient, held: Possession): { cnf?: Confirmation } {
  const jkt = held.proof?.jkt;
  // RFC 8705 §3: only a client that registered for it gets certificate-bound tokens (the token
  // service refuses its requests without a certificate), so other clients' certificates are not read.
  const x5t = client.tlsClientCertificateBoundAccessTokens ? held.certificate()?.thumbprint : undefined;
  if (!jkt && !x5t) return {};
  return { cnf: { ...(jkt ? { jkt } : {}), ...(x5t ? { 'x5t#S256': x5t } : {}) } };
}

/**
 * RFC 8705 §4: a public client's refresh token bound to a client certificate is exchanged only over
 * a connection presenting that certificate; without it, or with another, the token is not valid for
 * the request (`invalid_grant`, RFC 6749 §5.2). The certificate is read only for a bound token.
 */
export function checkBoundCertificate(
  bound: { 'x5t#S256'?: string } | undefined,
  certificate: CertificateSource,
  what: string,
): void {
  const x5t = bound?.['x5t#S256'];
  if (!x5t) return;
  const cert = certificate();
  if (!cert)
    throw oauth2Error('invalid_grant', {
      hint: `The ${what} is certificate-bound: present it over a connection with its TLS client certificate.`,
    });
  if (cert.thumbprint !== x5t)
    throw oauth2Error('invalid_grant', { hint: `The ${what} is bound to another TLS client certificate.` });
}
