/**
 * Refresh-token rotation rules, as pure functions.
 *
 * - Strict rotation (grace period 0, the default): a refresh token works once. Using it makes it
 *   inactive; presenting it again is reuse.
 * - Graceful rotation (`oauth2.grant.refresh_token.rotation_grace_period` > 0): a used token keeps
 *   working while `first_used_at + period > now` and, with a reuse count N > 0, while
 *   `used_times < N`. The token is judged on its used-times count alone: a count that was never
 *   stored (NULL, rows from before the column) is 0.
 */
import type { OAuth2Config } from '../deps.ts';

export interface GracePolicy {
  /** Milliseconds; 0 means strict rotation. */
  periodMs: number;
  /** 0: any number of reuses within the period. */
  reuseCount: number;
}

export interface RefreshUseState {
  active: boolean;
  firstUsedAt: Date | null;
  /** Already read as 0 when not stored. */
  usedTimes: number;
}

export const gracePolicyOf = (config: OAuth2Config): GracePolicy => ({
  periodMs: config.oauth2.grant.refresh_token.rotation_grace_period,
  reuseCount: config.oauth2.grant.refresh_token.rotation_grace_reuse_count,
});

/** May this refresh token be exchanged now? `false` for a used token means reuse (revoke the grant). */
export function refreshTokenUsable(t: RefreshUseState, now: Date, g: GracePolicy): boolean {
  const graceful = g.periodMs > 0;
  const withinCount = !graceful || g.reuseCount === 0 || t.usedTimes < g.reuseCount;
  if (t.active) return withinCount;
  if (!graceful || !t.firstUsedAt) return false;
  return t.firstUsedAt.getTime() + g.periodMs > now.getTime() && withinCount;
}
