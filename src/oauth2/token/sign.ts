/**
 * Signs a JWT (RFC 7519) whose claims gatehouse built itself: the claims are serialised once and
 * signed as a compact JWS (RFC 7515 §7.1) with `typ: JWT`. jose's `SignJWT` would first copy the
 * claims (`structuredClone`) to validate them, which costs more than the rest of the claims work
 * on the token endpoint; these claims need no validation (numbers and strings set here).
 */
import { CompactSign } from 'jose';
import type { SigningKey } from '../ports.ts';

const utf8 = new TextEncoder();

export function signJwt(claims: Record<string, unknown>, key: SigningKey): Promise<string> {
  return new CompactSign(utf8.encode(JSON.stringify(claims)))
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
    .sign(key.key);
}
