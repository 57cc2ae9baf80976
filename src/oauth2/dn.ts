/**
 * Distinguished names as `tls_client_auth_subject_dn` compares them (RFC 8705 §2.1.2: "the
 * expected subject distinguished name of the certificate ... represented as a string per RFC
 * 4514"). The registered string is parsed per RFC 4514 §3; the certificate's subject is read from
 * its DER (RFC 5280 §4.1.2.6), not from a printed form, so that escaping, attribute names and the
 * order of multi-valued RDNs cannot make equal names differ. Both become one canonical form: RDNs
 * in RFC 4514 order (the reverse of the DER sequence), the attributes of each RDN sorted, types as
 * OIDs, string values NFKC-normalised, trimmed, inner whitespace collapsed and lower-cased (an
 * approximation of RFC 4518's caseIgnoreMatch that serves the directory-string attributes
 * certificates use), and values of other types as `#` and the hex of their DER (RFC 4514 §2.4).
 */

/** RFC 4514 §3 / RFC 4519 short names (and OpenSSL's common ones) → OIDs. */
const NAMES: Record<string, string> = {
  cn: '2.5.4.3',
  sn: '2.5.4.4',
  serialnumber: '2.5.4.5',
  c: '2.5.4.6',
  l: '2.5.4.7',
  st: '2.5.4.8',
  street: '2.5.4.9',
  o: '2.5.4.10',
  ou: '2.5.4.11',
  title: '2.5.4.12',
  postalcode: '2.5.4.17',
  givenname: '2.5.4.42',
  gn: '2.5.4.42',
  initials: '2.5.4.43',
  generationqualifier: '2.5.4.44',
  dnqualifier: '2.5.4.46',
  pseudonym: '2.5.4.65',
  organizationidentifier: '2.5.4.97',
  dc: '0.9.2342.19200300.100.1.25',
  uid: '0.9.2342.19200300.100.1.1',
  emailaddress: '1.2.840.113549.1.9.1',
  e: '1.2.840.113549.1.9.1',
};

const OID = /^\d+(\.\d+)+$/;

const normalizeValue = (v: string) => v.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();

/** The canonical form of a list of RDNs (each a list of [oid, normalised value]), RFC 4514 order. */
const canonical = (rdns: Array<Array<[string, string]>>) =>
  JSON.stringify(rdns.map((rdn) => rdn.map(([t, v]) => `${t}=${v}`).sort()));

/** One attribute value of an RFC 4514 string, unescaped (`\` + special or hex pair), ending at `,`, `+` or the end. */
function readValue(s: string, start: number): { value: string; end: number } | undefined {
  if (s[start] === '#') {
    let i = start + 1;
    while (i < s.length && s[i] !== ',' && s[i] !== '+') i++;
    const hex = s.slice(start + 1, i).trim();
    if (!/^([0-9a-fA-F]{2})+$/.test(hex)) return undefined;
    return { value: `#${hex.toLowerCase()}`, end: i };
  }
  const bytes: number[] = [];
  let i = start;
  while (i < s.length && s[i] !== ',' && s[i] !== '+') {
    if (s[i] === '\\') {
      const pair = s.slice(i + 1, i + 3);
      if (/^[0-9a-fA-F]{2}$/.test(pair)) {
        bytes.push(Number.parseInt(pair, 16));
        i += 3;
        continue;
      }
      const next = s[i + 1];
      if (next === undefined || !' "#+,;<=>\\'.includes(next)) return undefined;
      bytes.push(...Buffer.from(next));
      i += 2;
      continue;
    }
    const cp = s.codePointAt(i) as number;
    const ch = String.fromCodePoint(cp);
    bytes.push(...Buffer.from(ch));
    i += ch.length;
  }
  const value = new TextDecoder('utf-8', { fatal: true });
  try {
    return { value: normalizeValue(value.decode(Buffer.from(bytes))), end: i };
  } catch {
    return undefined;
  }
}

/** The canonical form of an RFC 4514 string, or undefined when it is not one. */
export function canonicalDn(s: string): string | undefined {
  const rdns: Array<Array<[string, string]>> = [];
  let rdn: Array<[string, string]> = [];
  let i = 0;
  if (!s.trim()) return undefined;
  for (;;) {
    const eq = s.indexOf('=', i);
    if (eq < 0) return undefined;
    const name = s.slice(i, eq).trim();
    const type = OID.test(name) ? name : NAMES[name.toLowerCase()];
    if (!type) return undefined;
    const v = readValue(s, eq + 1);
    if (!v) return undefined;
    rdn.push([type, v.value]);
    i = v.end + 1;
    if (s[v.end] === '+') continue;
    rdns.push(rdn);
    rdn = [];
    if (v.end >= s.length) break;
  }
  return canonical(rdns);
}

// ---- DER (RFC 5280 §4.1) -------------------------------------------------------------------

interface Tlv {
  tag: number;
  /** Offset of the whole element and of its contents; end of its contents. */
  at: number;
  start: number;
  end: number;
}

function tlv(buf: Buffer, at: number, limit: number): Tlv {
  const tag = buf[at] as number;
  let len = buf[at + 1] as number;
  let p = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n < 1 || n > 4) throw new Error('bad DER length');
    len = 0;
    for (let k = 0; k < n; k++) len = len * 256 + (buf[p++] as number);
  }
  if (p + len > limit) throw new Error('DER element overruns its parent');
  return { tag, at, start: p, end: p + len };
}

function children(buf: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let p = parent.start; p < parent.end; ) {
    const c = tlv(buf, p, parent.end);
    out.push(c);
    p = c.end;
  }
  return out;
}

function oidOf(buf: Buffer, t: Tlv): string {
  const parts: number[] = [];
  let n = 0;
  for (let p = t.start; p < t.end; p++) {
    const b = buf[p] as number;
    n = n * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      if (!parts.length) parts.push(n < 80 ? Math.floor(n / 40) : 2, n < 80 ? n % 40 : n - 80);
      else parts.push(n);
      n = 0;
    }
  }
  return parts.join('.');
}

/** A DirectoryString (or IA5String) value as text; anything else as `#` + the hex of its DER. */
function attributeValue(buf: Buffer, t: Tlv): string {
  const body = buf.subarray(t.start, t.end);
  switch (t.tag) {
    case 0x0c: // UTF8String
      return normalizeValue(body.toString('utf8'));
    case 0x13: // PrintableString
    case 0x16: // IA5String
    case 0x14: // TeletexString, read as Latin-1 as most software does
      return normalizeValue(body.toString('latin1'));
    case 0x1e: // BMPString
      return normalizeValue(Buffer.from(body).swap16().toString('utf16le'));
    default:
      return `#${buf.subarray(t.at, t.end).toString('hex')}`;
  }
}

/**
 * The canonical form of a DER certificate's subject, or undefined when the DER cannot be read.
 * Node has parsed the certificate already; this only walks to its subject.
 */
export function canonicalSubject(der: Buffer): string | undefined {
  try {
    const cert = tlv(der, 0, der.length);
    const tbs = children(der, cert)[0];
    if (!tbs) return undefined;
    const fields = children(der, tbs);
    // version [0] is optional; then serialNumber, signature, issuer, validity, subject.
    const subject = fields[(fields[0]?.tag === 0xa0 ? 1 : 0) + 4];
    if (!subject) return undefined;
    const rdns = children(der, subject).map((set) =>
      children(der, set).map((atv): [string, string] => {
        const [type, value] = children(der, atv);
        if (!type || !value) throw new Error('bad AttributeTypeAndValue');
        return [oidOf(der, type), attributeValue(der, value)];
      }),
    );
    return canonical(rdns.reverse());
  } catch {
    return undefined;
  }
}
