/**
 * `oauth2.mtls` (RFC 8705) as the configuration check, the listener and the runtime read it: the
 * CA bundle of `tls_client_auth`, the addresses whose forwarded-certificate header is believed, and
 * whether client certificates can arrive at all (which is what discovery advertises). Kept apart
 * from mtls.ts so that the configuration part imports no request handling.
 */
import { X509Certificate } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { listenerTls } from '../core/http/tls.ts';

export interface MtlsSettings {
  readonly enabled: boolean;
  readonly ca: string;
  readonly trusted_proxy: { readonly header: string; readonly addresses: readonly string[] };
}

/** RFC 9110 §5.1: a header name is a token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The certificates of a PEM bundle.
 * @throws Error naming the first block that is not a certificate
 */
export function parseCaBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(PEM_CERT) ?? [];
  if (!blocks.length) throw new Error('holds no PEM certificate');
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b);
    } catch {
      throw new Error(`certificate ${i + 1} of the bundle cannot be parsed`);
    }
  });
}

/**
 * The proxies' addresses as one block list (an IPv4 entry also matches its IPv4-mapped IPv6 form,
 * which a dual-stack socket reports).
 * @throws Error naming the first entry that is neither an IP address nor a CIDR
 */
export function proxyAddresses(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const raw of entries) {
    const entry = raw.trim();
    const [addr = '', bits, extra] = entry.split('/');
    const family = isIP(addr);
    const max = family === 4 ? 32 : 128;
    const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : Number.NaN;
    if (!family || extra !== undefined || !(prefix >= 0 && prefix <= max))
      throw new Error(`'${raw}' is not an IP address or CIDR`);
    list.addSubnet(addr, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** Lines for the configuration check, each naming its key. */
export function checkMtlsConfig(m: MtlsSettings): string[] {
  const out: string[] = [];
  if (m.ca.trim()) {
    try {
      parseCaBundle(m.ca);
    } catch (e) {
      out.push(`oauth2.mtls.ca: ${(e as Error).message}`);
    }
  }
  const { header, addresses } = m.trusted_proxy;
  if (header && !HEADER_NAME.test(header)) out.push('oauth2.mtls.trusted_proxy.header: not an HTTP header name');
  try {
    proxyAddresses(addresses);
  } catch (e) {
    out.push(`oauth2.mtls.trusted_proxy.addresses: ${(e as Error).message}`);
  }
  if (header && !addresses.length)
    out.push('oauth2.mtls.trusted_proxy.addresses: must name the proxies when oauth2.mtls.trusted_proxy.header is set');
  return out;
}

/** Whether the public listener serves TLS (then it asks for client certificates). */
export const publicListenerTls = (c: Parameters<typeof listenerTls>[0]) => listenerTls(c, 'public') !== undefined;

/**
 * Whether client certificates can reach the endpoints: `oauth2.mtls.enabled` and either the public
 * listener serves TLS or a trusted proxy forwards them. Only then does discovery advertise RFC 8705.
 */
export const mtlsAvailable = (c: Parameters<typeof listenerTls>[0] & { oauth2: { mtls: MtlsSettings } }) =>
  c.oauth2.mtls.enabled && (publicListenerTls(c) || c.oauth2.mtls.trusted_proxy.header !== '');

/**
 * The TLS options of the public listener for client certificates (RFC 8705 §2): asked for, never
 * required (browsers and other clients without one connect as before), and verified against
 * `oauth2.mtls.ca` (Node's chain check, read as `socket.authorized`). Undefined when off.
 */
export function clientCertificateRequest(c: { oauth2: { mtls: MtlsSettings } }): { ca?: string } | undefined {
  const m = c.oauth2.mtls;
  if (!m.enabled) return undefined;
  return m.ca.trim() ? { ca: m.ca } : {};
}
