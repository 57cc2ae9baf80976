/**
 * Proof that the browser starting a Google Workspace authorization may configure the directory.
 * The authorize route is on the public listener (the administrator's browser must reach it), so
 * knowing a directory id is not enough: the route needs a short-lived authorization link that the
 * operator mints through the Api-Key admin API (`POST /api/v1/dsync/{id}/google/authorization-link`),
 * the way Jackson's admin portal and setup links hand a tenant's admin a link.
 *
 * A link token is a JWE (`dir` + A256GCM) under the `dsync_link` key of `secrets.system`, naming the
 * directory, expiring after `dsync.google.authorization_link_ttl`, and saying whether the
 * authorization may replace the Workspace connected now (`replace_workspace`).
 *
 * `verifyAuthorizationProof` takes a list of verifiers, so other kinds of proof (a setup-link
 * token, an admin-portal session) can be accepted by adding one: the first that accepts wins.
 */
import type { Clock } from '../../../core/clock.ts';
import { openJson, sealJson } from '../../../core/crypto/jwe.ts';
import type { KeyRing } from '../../../core/crypto/keys.ts';
import { dsyncError } from '../../errors.ts';

const TYP = 'dsync_google_link';

/** What a verified proof allows. */
export interface AuthorizationGrant {
  directoryId: string;
  /** The authorization may connect a different Workspace than the one recorded (the operator asked for it). */
  replaceWorkspace: boolean;
}

/**
 * One kind of proof: the grant when `token` proves the right to configure `directoryId`, else
 * undefined (never throws for a token it does not recognise, so the next verifier can try).
 */
export type AuthorizationVerifier = (directoryId: string, token: string) => Promise<AuthorizationGrant | undefined>;

export interface AuthorizationLinks {
  /** A link token for the directory, valid for the configured TTL. */
  mint(directoryId: string, opts?: { replaceWorkspace?: boolean }): Promise<{ token: string; expiresAt: Date }>;
  /** Accepts the link tokens `mint` made. */
  verify: AuthorizationVerifier;
}

export function createAuthorizationLinks(o: { ring: KeyRing; clock: Clock; ttlMs: number }): AuthorizationLinks {
  return {
    async mint(directoryId, opts = {}) {
      const now = o.clock.now().getTime();
      const payload = { d: directoryId.toLowerCase(), ...(opts.replaceWorkspace ? { r: true } : {}) };
      return { token: await sealJson(o.ring, TYP, payload, o.ttlMs, now), expiresAt: new Date(now + o.ttlMs) };
    },
    async verify(directoryId, token) {
      let data: { d?: unknown; r?: unknown };
      try {
        data = await openJson<{ d?: unknown; r?: unknown }>(o.ring, TYP, token, o.clock.now().getTime());
      } catch {
        return undefined;
      }
      if (typeof data.d !== 'string' || data.d !== directoryId.toLowerCase()) return undefined;
      return { directoryId: data.d, replaceWorkspace: data.r === true };
    },
  };
}

export const LINK_REQUIRED =
  'A valid authorization link is required to connect a Google Workspace to this directory; the link may have expired. Ask the operator for a new one (POST /api/v1/dsync/{id}/google/authorization-link).';

/** The grant of the first verifier that accepts `token` for `directoryId`; 401 otherwise (same answer for every failure). */
export async function verifyAuthorizationProof(
  verifiers: readonly AuthorizationVerifier[],
  directoryId: string,
  token: string | undefined,
): Promise<AuthorizationGrant> {
  if (token) {
    for (const v of verifiers) {
      const grant = await v(directoryId, token);
      if (grant) return grant;
    }
  }
  throw dsyncError(401, LINK_REQUIRED);
}
