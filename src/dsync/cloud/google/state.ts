/**
 * The OAuth `state` of a directory's Google authorization. Jackson sends `{"directoryId": …}` as
 * plain JSON, so anyone can forge a state for any directory and have an admin's browser attach
 * another Workspace to it. Here the state is a JWE (`dir` + A256GCM) under the `state` key of
 * `secrets.system`: it names the directory, expires after ten minutes and, when the flow was
 * started through the HTTP authorize route, carries a nonce that must match a cookie set on the
 * browser that started it (login CSRF: a callback link cannot be replayed in another browser).
 */

import { openJson, sealJson, TokenError } from '../../../core/crypto/jwe.ts';
import type { KeyRing } from '../../../core/crypto/keys.ts';
import { safeEqual } from '../../../core/crypto/random.ts';
import { dsyncError } from '../../errors.ts';

const TYP = 'dsync_google_state';
export const STATE_TTL_MS = 10 * 60_000;

export interface AuthorizationState {
  directoryId: string;
  /** Present when the flow is bound to a browser cookie. */
  nonce?: string;
  /** The authorization link allowed connecting a different Workspace than the recorded one. */
  replaceWorkspace?: boolean;
}

export const signState = (ring: KeyRing, s: AuthorizationState, now: Date): Promise<string> =>
  sealJson(
    ring,
    TYP,
    { d: s.directoryId, ...(s.nonce ? { n: s.nonce } : {}), ...(s.replaceWorkspace ? { r: true } : {}) },
    STATE_TTL_MS,
    now.getTime(),
  );

/**
 * The directory a state was issued for. Throws 400 when the state is missing, forged, altered,
 * expired, of another kind, or bound to a browser whose cookie (`nonce`) does not match.
 */
export async function verifyState(
  ring: KeyRing,
  state: string | undefined,
  now: Date,
  cookieNonce?: string,
): Promise<AuthorizationState> {
  const invalid = (why: string) =>
    dsyncError(400, `The authorization state is ${why}. Start the authorization of the directory again.`);
  if (!state) throw invalid('missing');
  let data: { d?: unknown; n?: unknown; r?: unknown };
  try {
    data = await openJson<{ d?: unknown; n?: unknown; r?: unknown }>(ring, TYP, state, now.getTime());
  } catch (e) {
    throw invalid(e instanceof TokenError && e.reason === 'expired' ? 'expired' : 'not valid');
  }
  if (typeof data.d !== 'string') throw invalid('not valid');
  if (typeof data.n === 'string' && !(cookieNonce && safeEqual(data.n, cookieNonce)))
    throw invalid('not bound to this browser (the authorization was started elsewhere, or its cookie is gone)');
  return {
    directoryId: data.d,
    ...(typeof data.n === 'string' ? { nonce: data.n } : {}),
    ...(data.r === true ? { replaceWorkspace: true } : {}),
  };
}
