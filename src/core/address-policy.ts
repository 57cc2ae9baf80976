/**
 * Which network addresses an outbound request may reach when internal ranges are refused, how a
 * host is named in messages without revealing an address, and how addresses are scrubbed from
 * free text (log lines). Classification is ipaddr.js's range table plus the embeddings it does not
 * unwrap: IPv4-mapped/-translated/-compatible IPv6, 6to4, Teredo and NAT64 carry an IPv4 address
 * that is checked in turn.
 */
import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

const v4FromParts = (hi: number, lo: number): IPv4 =>
  new ipaddr.IPv4([(hi >> 8) & 0xff, hi & 0xff, (lo >> 8) & 0xff, lo & 0xff]);

function rangeOfV4(a: IPv4): string {
  return a.range();
}

/** The embedded IPv4 addresses of an IPv6 address that carries some, else undefined. */
function embeddedV4(a: IPv6, range: string): IPv4[] | undefined {
  const p = a.parts as number[];
  const at = (i: number) => p[i] as number;
  switch (range) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d (IPv4-translated)
      return [v4FromParts(at(6), at(7))];
    case '6to4': // 2002:AABB:CCDD::/48
      return [v4FromParts(at(1), at(2))];
    case 'teredo': // 2001:0:SSSS:SSSS:flags:port:~CCCC:~CCCC (RFC 4380 §4)
      return [v4FromParts(at(2), at(3)), v4FromParts(~at(6) & 0xffff, ~at(7) & 0xffff)];
    case 'rfc6052': // 64:ff9b::/96 well-known NAT64 prefix; 64:ff9b:1::/48 is local use only
      return at(2) === 0 ? [v4FromParts(at(6), at(7))] : undefined;
    default:
      return undefined;
  }
}

/**
 * The range name of an address: `unicast` for a public address, otherwise ipaddr.js's name
 * (`loopback`, `private`, `linkLocal`, `uniqueLocal`, `carrierGradeNat`, `multicast`, …) or
 * `invalid`. For an embedding, the range of the embedded IPv4 address when that is not public.
 */
export function addressRange(ip: string): string {
  const bare = ip.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return 'invalid';
  const parsed = ipaddr.parse(bare);
  if (parsed.kind() === 'ipv4') return rangeOfV4(parsed as IPv4);
  const a = parsed as IPv6;
  const range = a.range();
  if (range === 'unicast') {
    // ::/96 (IPv4-compatible, deprecated by RFC 4291) is reported as unicast by ipaddr.js.
    if ((a.parts as number[]).slice(0, 6).every((x) => x === 0)) return 'reserved';
    return 'unicast';
  }
  if (range === 'rfc6052' && (a.parts[2] as number) !== 0) return 'reserved';
  const inner = embeddedV4(a, range);
  if (!inner) return range;
  for (const v4 of inner) {
    const r = rangeOfV4(v4);
    if (r !== 'unicast') return r;
  }
  return 'unicast';
}

export const isPublicAddress = (ip: string): boolean => addressRange(ip) === 'unicast';

/** `true` when `ip` lies in one of the CIDR ranges (`10.1.0.0/16`, `fd00::/8`, or a single address). */
export function inRanges(ip: string, cidrs: readonly string[]): boolean {
  if (!cidrs.length || !ipaddr.isValid(ip)) return false;
  const a = ipaddr.process(ip);
  return cidrs.some((c) => {
    const [net, bits] = c.includes('/') ? ipaddr.parseCIDR(c) : [ipaddr.process(c), c.includes(':') ? 128 : 32];
    const n = net.kind() === 'ipv6' && (net as IPv6).isIPv4MappedAddress() ? (net as IPv6).toIPv4Address() : net;
    return n.kind() === a.kind() && a.match(n as never, bits);
  });
}

/** Hostnames that name the local machine by definition (RFC 6761 §6.3), never resolved. */
export function isLocalhostName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.+$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/** The host of a URL without IPv6 brackets and trailing dots; `literal` when it is an IP address. */
export function bareHost(hostname: string): { host: string; literal: boolean } {
  const host = hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
  return { host, literal: isIPv4(host) || isIPv6(host) };
}

// A label that spells an address: hex/decimal digits with dashes (`10-0-0-1`, `fe80--1`, `7f000001`).
const ADDRESS_LABEL = /^(?=.*\d)(0x)?[0-9a-f-]+$/i;

/**
 * The name of a host as messages and logs may print it, with labels that could spell an address
 * replaced by `*` (`127.0.0.1.nip.io` → `*.nip.io`, `10-0-0-1.example` → `*.example`);
 * `undefined` for an IP literal, which is never printed.
 */
export function printableHost(hostname: string): string | undefined {
  const { host, literal } = bareHost(hostname);
  if (literal || host === '') return undefined;
  const labels = host.toLowerCase().split('.');
  const hide = labels.map((l) => ADDRESS_LABEL.test(l));
  for (let i = 0; i + 1 < labels.length; i++) {
    // digits on both sides of a dot could read as part of an address
    if (/\d$/.test(labels[i] as string) && /^\d/.test(labels[i + 1] as string)) hide[i] = hide[i + 1] = true;
  }
  const out: string[] = [];
  labels.forEach((l, i) => {
    if (!hide[i]) out.push(l);
    else if (out[out.length - 1] !== '*') out.push('*');
  });
  return out.join('.');
}

/** `host api.example.com`, or `an IP-literal host`: how messages name the target of a request. */
export function describeHost(hostname: string): string {
  const name = printableHost(hostname);
  return name === undefined ? 'an IP-literal host' : `host ${name}`;
}

const IPV4_TEXT = /(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)/g;
const IPV6_BRACKETED = /\[([0-9a-f:.]+)(?:%[\w.-]*)?\]/gi;
const IPV6_TEXT =
  /(?<![\w:.])(?:[0-9a-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9a-f]{0,4})(?:%[\w-]+)?(?![\w:]|\.\d)/gi;

/** Replaces IPv4 and IPv6 addresses (bracketed or not, with a zone or not) in free text with `[address]`. */
export function scrubAddresses(text: string): string {
  if (!/\d\.\d|:/.test(text)) return text;
  return text
    .replace(IPV6_BRACKETED, (m, inner: string) => (isIPv6(inner) ? '[address]' : m))
    .replace(IPV6_TEXT, (m) => (isIPv6(m.replace(/%.*$/, '')) ? '[address]' : m))
    .replace(IPV4_TEXT, '[address]');
}
