/**
 * `c_nonce` of OpenID for Verifiable Credential Issuance (draft 00, as Hydra implements it): issued
 * in the token response (`c_nonce_draft_00`, `c_nonce_expires_in_draft_00`) when the grant holds
 * both `openid` and `userinfo_credential_draft_00`, and by a `/credentials` request without a proof.
 * The nonce is sealed (`keyRing(secrets.system, 'flow')`) and bound to one access token, valid
 * `ttl.vc_nonce`; `/credentials` accepts each nonce once.
 */
import { createHash } from 'node:crypto';
import { openJson, sealJson } from '../../core/crypto/jwe.ts';
import type { KeyRing } from '../../core/crypto/keys.ts';

export const VC_SCOPE = 'userinfo_credential_draft_00';
const TYP = 'vc_nonce';

const bind = (accessSignature: string) =>
  createHash('sha256').update(`vc-nonce-at:${accessSignature}`).digest('base64url');

export interface VcNonces {
  lifespanMs: number;
  issue(accessSignature: string): Promise<string>;
  /** The nonce's expiry when it is valid for this access token; undefined otherwise. */
  check(nonce: string, accessSignature: string): Promise<Date | undefined>;
}

export function createVcNonces(ring: KeyRing, lifespanMs: number, now: () => Date): VcNonces {
  return {
    lifespanMs,
    issue: (accessSignature) => sealJson(ring, TYP, { at: bind(accessSignature) }, lifespanMs, now().getTime()),
    async check(nonce, accessSignature) {
      try {
        const at = now().getTime();
        const v = await openJson<{ at: string }>(ring, TYP, nonce, at);
        return v.at === bind(accessSignature) ? new Date(at + lifespanMs) : undefined;
      } catch {
        return undefined;
      }
    },
  };
}
