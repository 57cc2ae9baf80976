/**
 * Logout challenges and verifiers : the whole logout request sealed as a compact
 * JWE under `keyRing(secrets.system, 'flow')`, with its own `typ` per kind, so a login or consent
 * challenge is never accepted here and a challenge is never accepted as a verifier. No row is
 * written for a logout request and nothing records that one was handled: reading a handled request
 * again simply answers it again (never 410 Gone).
 *
 * Every value that cannot be opened — expired, tampered, sealed under a secret no longer
 * configured, or issued by a release that still kept logout requests in the database (a UUID) — is
 * refused the same way, as an expired request (`request_unauthorized`, "The logout request
 * expired…"). Starting the logout again gives a fresh, working challenge.
 */
import { openJson, peekType, sealJson } from '../../core/crypto/jwe.ts';
import type { KeyRing } from '../../core/crypto/keys.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID } from '../tables.ts';

export type LogoutTokenKind = 'logout_challenge' | 'logout_verifier';

export interface LogoutState {
  nid: string;
  subject: string;
  /** The login session to end. */
  sid: string;
  /** The logout URL as requested (path and query); '' in verifiers. */
  requestUrl: string;
  rpInitiated: boolean;
  /** The client of an RP-initiated logout; '' otherwise and in verifiers. */
  clientId: string;
  /** unix seconds */
  requestedAt: number;
  /** unix seconds */
  expiresAt: number;
  /** Where the browser goes once logged out (internal: not part of the admin view). */
  postLogoutRedirectUri: string;
}

/** The one answer for a logout challenge or verifier that cannot be used (any reason). */
export const logoutExpired = () =>
  oauth2Error('request_unauthorized', { hint: 'The logout request expired, please try the flow again.' });

export interface LogoutCodec {
  seal(kind: LogoutTokenKind, state: LogoutState): Promise<string>;
  /** @throws `logoutExpired()` for anything that is not a live token of this kind */
  open(kind: LogoutTokenKind, token: string): Promise<LogoutState>;
}

export function createLogoutCodec(ring: KeyRing, now: () => Date): LogoutCodec {
  return {
    seal(kind, state) {
      const at = now().getTime();
      return sealJson(ring, kind, state, state.expiresAt * 1000 - at, at);
    },
    async open(kind, token) {
      let state: LogoutState;
      try {
        state = await openJson<LogoutState>(ring, kind, token, now().getTime());
      } catch {
        throw logoutExpired();
      }
      if (state.nid !== DEFAULT_NID || state.expiresAt * 1000 < now().getTime()) throw logoutExpired();
      return state;
    },
  };
}

/**
 * For `gatehouse debug challenge`: the logout request inside a challenge or verifier, without
 * checking its expiry (the output says when it expires). Undefined when the value is not a logout
 * challenge or verifier sealed under one of the configured secrets.
 */
export async function decodeLogoutToken(
  ring: KeyRing,
  token: string,
): Promise<{ kind: LogoutTokenKind; expired: boolean; request: LogoutState } | undefined> {
  const sealed = await peekType(ring, token);
  if (!sealed || (sealed.typ !== 'logout_challenge' && sealed.typ !== 'logout_verifier')) return undefined;
  const request = sealed.data as LogoutState;
  return { kind: sealed.typ, expired: request.expiresAt * 1000 < Date.now(), request };
}
