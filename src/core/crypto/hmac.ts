/**
 * Hydra-style opaque tokens: `<prefix><B>.<S>`, where B is 32 random bytes (base64url) and S is
 * base64url(HMAC-SHA512/256(B)) keyed with sha256(secret). Only S is stored. Any configured system
 * secret validates (rotation); new tokens use the first.
 */
import { createHash, createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { secretKey } from './keys.ts';
import { random } from './random.ts';

export type TokenPrefix =
  | 'ory_at_'
  | 'ory_rt_'
  | 'ory_ac_'
  | 'ory_dc_'
  | 'ory_ht_'
  // RFC 9126 §2.2: the `request_uri` of a pushed authorization request.
  | 'urn:ietf:params:oauth:request_uri:';

/** sha256(secret) as a KeyObject, per configured secret (they are few: kept for the process). */
const hmacKeys = new Map<string, KeyObject>();
const hmacKey = (secret: string) => {
  let k = hmacKeys.get(secret);
  if (!k) {
    k = secretKey(createHash('sha256').update(secret, 'utf8').digest());
    if (hmacKeys.size >= 64) hmacKeys.clear();
    hmacKeys.set(secret, k);
  }
  return k;
};
const sign = (key: KeyObject, b: string) => createHmac('sha512-256', key).update(b).digest('base64url');

export interface OpaqueToken {
  token: string;
  /** The database key. */
  signature: string;
}

export function generateOpaqueToken(prefix: TokenPrefix, secrets: readonly string[]): OpaqueToken {
  const b = random(32).toString('base64url');
  const signature = sign(hmacKey(secrets[0] as string), b);
  return { token: `${prefix}${b}.${signature}`, signature };
}

/**
 * The signature of a well-formed token whose HMAC verifies under one of the secrets; undefined
 * otherwise (malformed, wrong prefix, forged). Constant-time per secret.
 */
export function verifyOpaqueToken(prefix: TokenPrefix, token: string, secrets: readonly string[]): string | undefined {
  if (!token.startsWith(prefix)) return undefined;
  const rest = token.slice(prefix.length);
  const dot = rest.indexOf('.');
  if (dot <= 0) return undefined;
  const b = rest.slice(0, dot);
  const s = rest.slice(dot + 1);
  const given = Buffer.from(s, 'base64url');
  if (given.length !== 32 || given.toString('base64url') !== s) return undefined;
  let ok = false;
  for (const secret of secrets) {
    const expected = Buffer.from(sign(hmacKey(secret), b), 'base64url');
    if (timingSafeEqual(expected, given)) ok = true;
  }
  return ok ? s : undefined;
}

/**
 * Jackson's webhook signature header value (`BoxyHQ-Signature` / `Ory-Polis-Signature`):
 * `t=<ms>,s=<hex HMAC-SHA256(secret, "<ms>.<raw body>")>`; `''` for an empty secret, as Jackson.
 */
export function webhookSignature(secret: string, timestampMs: number, body: string): string {
  if (!secret) return '';
  const s = createHmac('sha256', secret).update(`${timestampMs}.${body}`, 'utf8').digest('hex');
  return `t=${timestampMs},s=${s}`;
}
