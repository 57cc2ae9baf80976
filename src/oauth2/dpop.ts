/**
 * DPoP proofs (RFC 9449): a client proves possession of a key with a JWT in the `DPoP` header,
 * signed by that key (its public part in the JWT's header), naming the request's method (`htm`) and
 * URL (`htu`), when it was made (`iat`), a unique `jti`, and, where an access token is presented,
 * that token's hash (`ath`). An access token issued on a proof is bound to the key's thumbprint
 * (`cnf.jkt`, RFC 7638) and is good only with a fresh proof of the same key.
 *
 * Checks (§4.3): one header; `typ` `dpop+jwt`; an allowed asymmetric `alg`; a public `jwk`; the
 * signature (these in dpop-jws.ts); `htm`, `htu` (scheme and host case-insensitive, default ports
 * and query ignored); `iat` within `oauth2.dpop.proof_lifetime` (and 5 s of skew); `ath`; the server nonce when
 * `oauth2.dpop.use_nonce`. Each `jti` is used once per key across processes (§11.1): its hash is
 * recorded (`oauth2_jti_blacklist`) until the proof could no longer be accepted anyway; `verify`
 * records it before it returns, `verifyUnspent` leaves that to its caller (the token endpoint
 * writes it in the statement that stores the token issued on the proof).
 * Server nonces (§8) are an HMAC of the current 5-minute window under the system secret: every
 * process computes the same, nothing is stored, and the previous window's stays valid.
 */
import { createHash, createHmac } from 'node:crypto';
import { keepNewest } from '../core/bounded.ts';
import type { Clock } from '../core/clock.ts';
import type { AppError } from '../core/errors.ts';
import type { OAuth2Config } from './deps.ts';
import { createProofJws, ProofRefused } from './dpop-jws.ts';
import { oauth2Error } from './oauth-errors.ts';
import { insertJtiGrouped } from './store/token-batch.ts';
import type { JtiRow } from './store/tokens.ts';
import type { Db } from './tables.ts';

const SKEW_MS = 5_000;
const NONCE_WINDOW_MS = 5 * 60_000;
/** `htu` values kept normalised (the endpoint's own URLs, and what clients send), up to a length. */
const URLS_KEPT = 1_000;
const URL_KEPT_CHARS = 2_048;

export interface VerifiedProof {
  /** The key's RFC 7638 thumbprint (SHA-256, base64url). */
  jkt: string;
}

/** A proof whose checks passed, its `jti` not recorded yet: nothing may be answered on it until it is. */
export interface UnspentProof extends VerifiedProof {
  /** The record of its jti: the hash (per key), until when it is kept, and the time of the check. */
  jti: JtiRow;
}

export interface ProofCheck {
  /** The request's method. */
  htm: string;
  /** The URLs the request may have been sent to (the endpoint as configured and as addressed). */
  htu: readonly string[];
  /** The access token presented with the proof (its hash must be the proof's `ath`). */
  accessToken?: string;
}

/** `ath`: base64url(SHA-256(access token)) (§4.2). */
export const tokenHash = (token: string) => createHash('sha256').update(token).digest('base64url');

/** A URL as `htu` compares it (§4.3): no query or fragment, scheme and host lower case, no default port. */
function normalizeHtu(raw: string): string | undefined {
  try {
    const u = new URL(raw);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return undefined;
  }
}

/** normalizeHtu, kept per URL: a client sends the same `htu` with every proof, and the endpoint's are few. */
function normalizedHtus() {
  const kept = new Map<string, string | undefined>();
  return (raw: string): string | undefined => {
    if (raw.length > URL_KEPT_CHARS) return normalizeHtu(raw);
    const known = kept.get(raw);
    const n = known !== undefined || kept.has(raw) ? known : normalizeHtu(raw);
    keepNewest(kept, raw, n, URLS_KEPT);
    return n;
  };
}

export interface Dpop {
  enabled: boolean;
  /** The current server nonce, when nonces are required. */
  nonce(): string | undefined;
  /**
   * The proof of a request, checked; undefined when the request carries none. Errors are
   * `invalid_dpop_proof`, or `use_dpop_nonce` with the `DPoP-Nonce` header to retry with.
   */
  verify(header: string | undefined, check: ProofCheck): Promise<VerifiedProof | undefined>;
  /**
   * As `verify`, without recording the proof's `jti`: the caller records it (`spend`, or with
   * what it writes) before it answers anything issued on the proof.
   */
  verifyUnspent(header: string | undefined, check: ProofCheck): Promise<UnspentProof | undefined>;
  /** Records the `jti` of a proof of `verifyUnspent`: `invalid_dpop_proof` when it was used already. */
  spend(proof: UnspentProof): Promise<VerifiedProof>;
}

/** The answer to a proof whose `jti` was used already. */
export const replayedProof = (): AppError =>
  oauth2Error('invalid_dpop_proof', { hint: "The DPoP proof's 'jti' was used already." });

export function createDpop(d: { config: OAuth2Config; clock: Clock; db: Db }): Dpop {
  const cfg = d.config.oauth2.dpop;
  const secret = createHash('sha256')
    .update(`dpop-nonce:${d.config.secrets.system[0] ?? ''}`)
    .digest();
  const nonceAt = (window: number) => createHmac('sha256', secret).update(String(window)).digest('base64url');
  const window = () => Math.floor(d.clock.now().getTime() / NONCE_WINDOW_MS);
  const invalid = (hint: string): AppError => oauth2Error('invalid_dpop_proof', { hint });

  const jws = createProofJws(cfg.signing_algs);
  const htuOf = normalizedHtus();

  async function checkNonce(given: unknown): Promise<void> {
    const w = window();
    if (typeof given === 'string' && (given === nonceAt(w) || given === nonceAt(w - 1))) return;
    throw oauth2Error('use_dpop_nonce', {
      hint: 'Authorization server requires nonce in DPoP proof.',
      headers: { 'DPoP-Nonce': nonceAt(w) },
    });
  }

  async function spend(proof: UnspentProof): Promise<VerifiedProof> {
    const { signature, expiresAt, now } = proof.jti;
    if (!(await insertJtiGrouped(d.db, signature, expiresAt, now))) throw replayedProof();
    return { jkt: proof.jkt };
  }

  async function verifyUnspent(header: string | undefined, check: ProofCheck): Promise<UnspentProof | undefined> {
    if (header === undefined || !cfg.enabled) return undefined;
    const proof = header.trim();
    if (!proof || proof.includes(',')) throw invalid('The request must carry exactly one DPoP proof.');
    const now = d.clock.now().getTime();
    let claims: Record<string, unknown>;
    let jkt: string;
    try {
      const verified = await jws.verify(proof, Math.floor(now / 1000));
      claims = verified.claims;
      jkt = verified.header.jkt;
    } catch (e) {
      if (e instanceof ProofRefused) throw invalid(e.message);
      throw e;
    }
    const { jti, htm, htu, iat, ath } = claims;
    if (typeof jti !== 'string' || !jti || jti.length > 256) throw invalid("The DPoP proof needs a 'jti'.");
    if (htm !== check.htm) throw invalid(`The DPoP proof's 'htm' must be '${check.htm}'.`);
    const target = typeof htu === 'string' ? htuOf(htu) : undefined;
    if (!target || !check.htu.some((u) => htuOf(u) === target))
      throw invalid("The DPoP proof's 'htu' is not the URL of this request.");
    if (typeof iat !== 'number' || iat * 1000 > now + SKEW_MS || iat * 1000 < now - cfg.proof_lifetime - SKEW_MS)
      throw invalid("The DPoP proof's 'iat' is too far from the server's time.");
    if (check.accessToken !== undefined) {
      if (ath !== tokenHash(check.accessToken))
        throw invalid("The DPoP proof's 'ath' is not the hash of the access token presented.");
    }
    if (cfg.use_nonce) await checkNonce(claims.nonce);
    const key = createHash('sha256').update(`dpop\n${jkt}\n${jti}`).digest('hex');
    const until = new Date(iat * 1000 + cfg.proof_lifetime + 2 * SKEW_MS);
    return { jkt, jti: { signature: key, expiresAt: until, now: new Date(now) } };
  }

  return {
    enabled: cfg.enabled,
    nonce: () => (cfg.enabled && cfg.use_nonce ? nonceAt(window()) : undefined),
    async verify(header, check) {
      const proof = await verifyUnspent(header, check);
      return proof && spend(proof);
    },
    verifyUnspent,
    spend,
  };
}

/**
 * A code bound by `dpop_jkt` (§10) or a public client's refresh token bound at issuance (§5): the
 * exchange must prove the same key.
 */
export function checkBoundExchange(
  bound: { jkt?: string } | undefined,
  proof: VerifiedProof | undefined,
  what: string,
): void {
  if (!bound?.jkt) return;
  if (!proof) throw oauth2Error('invalid_dpop_proof', { hint: `The ${what} is DPoP-bound: a DPoP proof is required.` });
  if (proof.jkt !== bound.jkt)
    throw oauth2Error('invalid_dpop_proof', { hint: `The DPoP proof's key is not the one the ${what} is bound to.` });
}
