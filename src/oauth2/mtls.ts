/**
 * Client certificates (RFC 8705): the certificate a request came with, from the TLS connection of
 * the public listener (which asks for one without requiring it) or, from a trusted proxy's address
 * only, from `oauth2.mtls.trusted_proxy.header`; and the checks the endpoints make of it.
 *
 * A certificate is *PKI-verified* (what `tls_client_auth` needs, §2.1) when Node's TLS handshake
 * verified its chain against `oauth2.mtls.ca` (`socket.authorized`), or, for a forwarded one, when
 * it chains to those CAs here (signature, issuer, validity, CA flag; a client-authentication
 * extended key usage when it has one) — never because the proxy said so. Without
 * `oauth2.mtls.ca` nothing is PKI-verified (Node would fall back to the public web roots).
 * `self_signed_tls_client_auth` (§2.2) needs no chain: the certificate's key must be one of the
 * client's keys. Access tokens bound to a certificate carry `cnf.x5t#S256` (§3.1).
 *
 * Cost: nothing is read unless an endpoint asks (`CertificateSource` is a thunk, memoised per
 * request), and a TLS connection's certificate is parsed once per connection.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { isIPv4 } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { Context } from 'koa';
import type { Clock } from '../core/clock.ts';
import type { OAuth2Config } from './deps.ts';
import { canonicalDn, canonicalSubject } from './dn.ts';
import { mtlsAvailable, parseCaBundle, proxyAddresses, publicListenerTls } from './mtls-config.ts';
import type { FlowClient } from './ports.ts';

export interface ClientCertificate {
  x509: X509Certificate;
  /** RFC 8705 §3.1: base64url(SHA-256(DER)), the `x5t#S256` of a bound token. */
  thumbprint: string;
  /** Its chain ends in `oauth2.mtls.ca` (see above). */
  pkiVerified: boolean;
}

/** The request's client certificate, read on first call (undefined: none). */
export type CertificateSource = () => ClientCertificate | undefined;
export const NO_CERTIFICATE: CertificateSource = () => undefined;

export interface ClientCertificates {
  /** Client certificates can arrive (discovery advertises RFC 8705). */
  available: boolean;
  of(ctx: Context): CertificateSource;
}

/** RFC 5280 §4.2.1.12 id-kp-clientAuth. */
const CLIENT_AUTH_EKU = '1.3.6.1.5.5.7.3.2';
const ANY_EKU = '2.5.29.37.0';
const MAX_CHAIN = 8;

const thumbprintOf = (x509: X509Certificate) => createHash('sha256').update(x509.raw).digest('base64url');

const within = (c: X509Certificate, now: Date) => c.validFromDate <= now && now <= c.validToDate;

/** The chain check of a forwarded certificate: up to a self-issued CA of the bundle, as OpenSSL's default. */
export function chainsTo(leaf: X509Certificate, cas: readonly X509Certificate[], now: Date): boolean {
  const eku = leaf.keyUsage;
  if (!within(leaf, now) || (eku && !eku.includes(CLIENT_AUTH_EKU) && !eku.includes(ANY_EKU))) return false;
  let cert = leaf;
  for (let depth = 0; depth < MAX_CHAIN; depth++) {
    const issuer = cas.find((ca) => ca.ca && within(ca, now) && cert.checkIssued(ca) && cert.verify(ca.publicKey));
    if (!issuer) return false;
    if (issuer.checkIssued(issuer)) return true;
    cert = issuer;
  }
  return false;
}

/** A URL-encoded PEM (nginx's `$ssl_client_escaped_cert`), or a PEM whose line breaks a proxy turned into spaces. */
function forwarded(value: string): X509Certificate | undefined {
  let text: string;
  try {
    text = decodeURIComponent(value);
  } catch {
    return undefined;
  }
  const m = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/.exec(text);
  if (!m) return undefined;
  try {
    return new X509Certificate(Buffer.from((m[1] as string).replace(/\s+/g, ''), 'base64'));
  } catch {
    return undefined;
  }
}

const V4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

export function createClientCertificates(d: { config: OAuth2Config; clock: Clock }): ClientCertificates {
  const m = d.config.oauth2.mtls;
  const available = mtlsAvailable(d.config);
  const fromTls = m.enabled && publicListenerTls(d.config);
  const cas = m.ca.trim() ? parseCaBundle(m.ca) : [];
  const header = m.enabled ? m.trusted_proxy.header.toLowerCase() : '';
  const proxies = header ? proxyAddresses(m.trusted_proxy.addresses) : undefined;
  // One parse per TLS connection: a keep-alive client sends many requests over one.
  const perSocket = new WeakMap<TLSSocket, ClientCertificate | null>();

  function trustedProxy(address: string | undefined): boolean {
    if (!proxies || !address) return false;
    const v4 = V4_MAPPED.exec(address)?.[1];
    if (v4) return proxies.check(v4, 'ipv4');
    return proxies.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
  }

  function ofSocket(socket: TLSSocket): ClientCertificate | undefined {
    let c = perSocket.get(socket);
    if (c === undefined) {
      const x509 = socket.getPeerX509Certificate();
      // `authorized` is Node's verification against the `ca` the listener was given (mtls-config.ts).
      c = x509 ? { x509, thumbprint: thumbprintOf(x509), pkiVerified: cas.length > 0 && socket.authorized } : null;
      perSocket.set(socket, c);
    }
    return c ?? undefined;
  }

  function read(ctx: Context): ClientCertificate | undefined {
    const socket = ctx.req.socket;
    if (trustedProxy(socket.remoteAddress)) {
      // The connection is the proxy's: its own certificate, if any, is not the client's.
      const value = ctx.get(header);
      const x509 = value ? forwarded(value) : undefined;
      if (!x509) return undefined;
      return { x509, thumbprint: thumbprintOf(x509), pkiVerified: chainsTo(x509, cas, d.clock.now()) };
    }
    if (fromTls && (socket as TLSSocket).encrypted) return ofSocket(socket as TLSSocket);
    return undefined;
  }

  return {
    available,
    of(ctx) {
      if (!fromTls && !proxies) return NO_CERTIFICATE;
      let memo: ClientCertificate | null | undefined;
      return () => {
        memo ??= read(ctx) ?? null;
        return memo ?? undefined;
      };
    },
  };
}

/**
 * RFC 8705 §2.1.2: the certificate carries what a `tls_client_auth` client registered — its
 * subject DN (compared canonically, dn.ts) or the one SAN entry (DNS and e-mail as OpenSSL
 * compares them, no wildcards; IP addresses as addresses; URIs exactly).
 */
export function certificateNames(cert: ClientCertificate, expected: NonNullable<FlowClient['tlsClientAuth']>): boolean {
  const { x509 } = cert;
  switch (expected.field) {
    case 'subject_dn': {
      const want = canonicalDn(expected.value);
      return want !== undefined && want === canonicalSubject(x509.raw);
    }
    case 'san_dns':
      return x509.checkHost(expected.value, { subject: 'never', wildcards: false }) !== undefined;
    case 'san_ip':
      return x509.checkIP(expected.value) !== undefined;
    case 'san_email':
      return x509.checkEmail(expected.value, { subject: 'never' }) !== undefined;
    case 'san_uri':
      return sanEntries(x509).some(([type, value]) => type === 'URI' && value === expected.value);
  }
}

/** Node's `subjectAltName`: `TYPE:value` entries joined by `, `, a value with special characters JSON-quoted. */
function sanEntries(x509: X509Certificate): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const re = /([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/gy;
  const text = x509.subjectAltName ?? '';
  for (let m = re.exec(text); m && m[0] !== ''; m = re.exec(text)) {
    const raw = m[2] as string;
    let value = raw;
    if (raw.startsWith('"')) {
      try {
        value = JSON.parse(raw) as string;
      } catch {
        continue;
      }
    }
    out.push([m[1] as string, value]);
  }
  return out;
}

/** RFC 8705 §2.2: the certificate's public key is one of `keys` (compared by RFC 7638 thumbprint). */
export async function certificateKeyIn(cert: ClientCertificate, keys: readonly JWK[]): Promise<boolean> {
  const own = await calculateJwkThumbprint(cert.x509.publicKey.export({ format: 'jwk' }) as JWK, 'sha256');
  for (const k of keys) {
    if (k.kty === 'oct') continue;
    try {
      if ((await calculateJwkThumbprint(k, 'sha256')) === own) return true;
    } catch {
      // A key jose cannot take the thumbprint of is not the certificate's.
    }
  }
  return false;
}
