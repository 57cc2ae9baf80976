/**
 * The JWS of a DPoP proof (RFC 9449 §4.2, §4.3 steps 2–7; RFC 7515 compact serialization), checked
 * with node:crypto. The checks are those jose's `jwtVerify` made with the header's
 * key (`EmbeddedJWK`), which this replaces on the token endpoint's hot path:
 *
 * - the header: a JSON object, `typ` `dpop+jwt`, an `alg` of the allowed ones, a public `jwk` of
 *   that algorithm's kind — an EC key on the algorithm's curve, an RSA key of at least 2,048 bits,
 *   an Ed25519 key —, `key_ops` `["verify"]` when present, and no `crit` but `b64`
 *   (RFC 7797) set to true;
 * - the signature, of the exact length for ECDSA (RFC 7518 §3.4), RSASSA-PSS with the salt as
 *   long as the hash (§3.5);
 * - the payload: a JSON object; `nbf` and `exp`, when present, numbers that hold now.
 *
 * A client sends the same header with every proof (its key does not change), so what the header
 * yields — the algorithm, the imported key, its RFC 7638 thumbprint — is kept per header as sent:
 * parsing the header, importing its key and hashing the thumbprint are done once, every signature
 * is verified. An ECDSA signature is handed over in DER: node:crypto's own conversion of the IEEE
 * P1363 form costs about a third of the verification, on the event loop's thread.
 */
import { constants, createHash, createPublicKey, type KeyObject, verify } from 'node:crypto';
import { keepNewest } from '../core/bounded.ts';

/** What node:crypto needs per algorithm (RFC 7518 §3.1; EdDSA, RFC 8037: Ed25519 as jose takes it). */
interface AlgSpec {
  kty: 'EC' | 'RSA' | 'OKP';
  /** The JWK `crv` (EC, OKP). */
  crv?: string;
  /** The key's curve as node:crypto names it (`asymmetricKeyDetails.namedCurve`, or the key type for OKP). */
  curve?: string;
  hash: string | null;
  /** ECDSA: the bytes of r and of s. */
  half?: number;
  /** RSASSA-PSS: the salt length. */
  pss?: number;
}

const ALGS: Record<string, AlgSpec> = {
  ES256: { kty: 'EC', crv: 'P-256', curve: 'prime256v1', hash: 'sha256', half: 32 },
  ES384: { kty: 'EC', crv: 'P-384', curve: 'secp384r1', hash: 'sha384', half: 48 },
  ES512: { kty: 'EC', crv: 'P-521', curve: 'secp521r1', hash: 'sha512', half: 66 },
  RS256: { kty: 'RSA', hash: 'sha256' },
  RS384: { kty: 'RSA', hash: 'sha384' },
  RS512: { kty: 'RSA', hash: 'sha512' },
  PS256: { kty: 'RSA', hash: 'sha256', pss: 32 },
  PS384: { kty: 'RSA', hash: 'sha384', pss: 48 },
  PS512: { kty: 'RSA', hash: 'sha512', pss: 64 },
  EdDSA: { kty: 'OKP', crv: 'Ed25519', curve: 'ed25519', hash: null },
};

/** RSA keys below this size are refused (RFC 7518 §3.3). */
const MIN_RSA_BITS = 2048;
/** Members of a private (or symmetric) JWK: a proof's key must be public. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
/** RFC 7638 §3.2: the required members of each key type, in lexicographic order. */
const THUMBPRINT_MEMBERS: Record<AlgSpec['kty'], readonly string[]> = {
  EC: ['crv', 'kty', 'x', 'y'],
  RSA: ['e', 'kty', 'n'],
  OKP: ['crv', 'kty', 'x'],
};
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });
/** Headers kept with what they yield (see above). */
const HEADERS_KEPT = 1_000;

/** Why a proof is refused, as the hint to answer with. */
export class ProofRefused extends Error {}

/** A header checked: the algorithm and the key it names, with the key's RFC 7638 thumbprint. */
export interface ProofHeader {
  alg: string;
  spec: AlgSpec;
  key: KeyObject;
  jkt: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function json(segment: string): unknown {
  return JSON.parse(utf8.decode(Buffer.from(segment, 'base64url')));
}

/** The key of the header's `jwk` for `spec`, public and usable to verify, or why not. */
function importKey(jwk: Record<string, unknown>, spec: AlgSpec): { key: KeyObject; jkt: string } {
  const keyMembers = (): ProofRefused =>
    new ProofRefused("The DPoP proof's header must carry the public key ('jwk') that signed it.");
  if (PRIVATE_MEMBERS.some((m) => m in jwk)) throw keyMembers();
  const members = THUMBPRINT_MEMBERS[spec.kty];
  if (jwk.kty !== spec.kty || members.some((m) => typeof jwk[m] !== 'string')) throw unverified();
  if (spec.crv !== undefined && jwk.crv !== spec.crv) throw unverified();
  // As jose's import of the key: `key_ops`, when present, must be what WebCrypto takes for a
  // public key that verifies (`use` it ignored).
  if (jwk.ext !== undefined && typeof jwk.ext !== 'boolean') throw unverified();
  if (
    jwk.key_ops !== undefined &&
    !(Array.isArray(jwk.key_ops) && jwk.key_ops.length === 1 && jwk.key_ops[0] === 'verify')
  )
    throw unverified();
  const required = Object.fromEntries(members.map((m) => [m, jwk[m] as string]));
  let key: KeyObject;
  try {
    key = createPublicKey({ key: required, format: 'jwk' });
  } catch {
    throw unverified();
  }
  const details = key.asymmetricKeyDetails;
  if (spec.kty === 'RSA') {
    if (key.asymmetricKeyType !== 'rsa' || (details?.modulusLength ?? 0) < MIN_RSA_BITS) throw unverified();
  } else if (spec.kty === 'EC') {
    if (key.asymmetricKeyType !== 'ec' || details?.namedCurve !== spec.curve) throw unverified();
  } else if (key.asymmetricKeyType !== spec.curve) throw unverified();
  const jkt = createHash('sha256').update(JSON.stringify(required)).digest('base64url');
  return { key, jkt };
}

const unverified = () => new ProofRefused("The DPoP proof's signature does not verify with its key.");

/** Checks a proof's header segment (see above); `algs` are the allowed algorithms. */
function checkHeader(segment: string, algs: readonly string[]): ProofHeader {
  let h: unknown;
  try {
    h = json(segment);
  } catch {
    throw new ProofRefused('The DPoP proof is not a JWT.');
  }
  if (!isObject(h)) throw new ProofRefused('The DPoP proof is not a JWT.');
  if (h.typ !== 'dpop+jwt') throw new ProofRefused("The DPoP proof's 'typ' must be 'dpop+jwt'.");
  const alg = h.alg;
  const spec = typeof alg === 'string' && Object.hasOwn(ALGS, alg) ? ALGS[alg] : undefined;
  if (typeof alg !== 'string' || !spec || !algs.includes(alg))
    throw new ProofRefused(`The DPoP proof's algorithm must be one of ${algs.join(', ')}.`);
  if (!isObject(h.jwk))
    throw new ProofRefused("The DPoP proof's header must carry the public key ('jwk') that signed it.");
  // RFC 7515 §4.1.11: an extension the header marks critical must be understood; the only one is
  // b64 (RFC 7797), and a JWT's payload is always encoded.
  if (h.crit !== undefined) {
    const crit = h.crit;
    if (!Array.isArray(crit) || !crit.length || crit.some((c) => c !== 'b64') || h.b64 !== true) throw unverified();
  }
  return { alg, spec, ...importKey(h.jwk, spec) };
}

/** IEEE P1363 r‖s (each `half` bytes) as a DER ECDSA-Sig-Value; undefined when the length is not exact. */
function derSignature(sig: Buffer, half: number): Buffer | undefined {
  if (sig.length !== 2 * half) return undefined;
  const integer = (v: Buffer): Buffer => {
    let i = 0;
    while (i < v.length - 1 && v[i] === 0) i++;
    const body = v.subarray(i);
    const pad = ((body[0] as number) & 0x80) !== 0;
    const out = Buffer.allocUnsafe(2 + (pad ? 1 : 0) + body.length);
    out[0] = 0x02;
    out[1] = body.length + (pad ? 1 : 0);
    if (pad) out[2] = 0;
    body.copy(out, pad ? 3 : 2);
    return out;
  };
  const r = integer(sig.subarray(0, half));
  const s = integer(sig.subarray(half));
  const length = r.length + s.length;
  const head = length < 0x80 ? Buffer.of(0x30, length) : Buffer.of(0x30, 0x81, length);
  return Buffer.concat([head, r, s]);
}

/**
 * Whether the signature holds, verified on libuv's thread pool (node:crypto's callback form): the
 * event loop only hands the job over (with a DER signature, about a tenth of the verification's
 * CPU), where WebCrypto and the synchronous form keep half of it or all on the event loop's thread.
 */
function signatureHolds(header: ProofHeader, input: Buffer, signature: Buffer): Promise<boolean> {
  const { spec, key } = header;
  return new Promise((resolve) => {
    const done = (e: Error | null, ok: boolean) => resolve(!e && ok);
    try {
      if (spec.half !== undefined) {
        const der = derSignature(signature, spec.half);
        if (!der) resolve(false);
        else verify(spec.hash, input, key, der, done);
      } else if (spec.pss !== undefined) {
        const pss = { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: spec.pss };
        verify(spec.hash, input, pss, signature, done);
      } else verify(spec.hash, input, key, signature, done);
    } catch {
      resolve(false);
    }
  });
}

/** The proof checker of a process: headers kept (see above), the allowed algorithms. */
export function createProofJws(algs: readonly string[]) {
  const headers = new Map<string, ProofHeader>();
  return {
    /**
     * The claims of a proof whose header and signature hold, with its header; throws ProofRefused.
     * `nowSeconds`: for `nbf` and `exp`.
     */
    async verify(proof: string, nowSeconds: number): Promise<{ header: ProofHeader; claims: Record<string, unknown> }> {
      const first = proof.indexOf('.');
      const second = proof.indexOf('.', first + 1);
      if (first < 0 || second < 0 || proof.indexOf('.', second + 1) >= 0)
        throw new ProofRefused('The DPoP proof is not a JWT.');
      const h = proof.slice(0, first);
      const p = proof.slice(first + 1, second);
      const s = proof.slice(second + 1);
      if (!BASE64URL.test(h)) throw new ProofRefused('The DPoP proof is not a JWT.');
      let header = headers.get(h);
      if (!header) header = checkHeader(h, algs);
      keepNewest(headers, h, header, HEADERS_KEPT);
      if (!BASE64URL.test(p) || !BASE64URL.test(s)) throw unverified();
      if (!(await signatureHolds(header, Buffer.from(proof.slice(0, second), 'latin1'), Buffer.from(s, 'base64url'))))
        throw unverified();
      let claims: unknown;
      try {
        claims = json(p);
      } catch {
        throw unverified();
      }
      if (!isObject(claims)) throw unverified();
      // RFC 7519 §4.1.4–4.1.5, as jose checked them.
      const { nbf, exp } = claims;
      if (nbf !== undefined && (typeof nbf !== 'number' || nbf > nowSeconds)) throw unverified();
      if (exp !== undefined && (typeof exp !== 'number' || exp <= nowSeconds)) throw unverified();
      return { header, claims };
    },
  };
}
