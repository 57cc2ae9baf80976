/**
 * What a token request proved possession of, and what its access token is bound to (RFC 7800
 * `cnf`): the key of its DPoP proof (RFC 9449 §6, `jkt`), and the client certificate of a client
 * registered with `tls_client_certificate_bound_access_tokens` (RFC 8705 §3, `x5t#S256`). Both may
 * hold at once; a resource then checks both.
 */
import type { VerifiedProof } from '../dpop.ts';
import type { CertificateSource } from '../mtls.ts';
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
