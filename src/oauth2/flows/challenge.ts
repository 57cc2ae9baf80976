/**
 * Challenges and verifiers: the flow state sealed as a compact JWE (`keyRing(secrets.system,
 * 'flow')`), one `typ` per kind, expiring `ttl.login_consent_request` after the authorization
 * request. Decoding failures become Hydra's errors: 404 for a challenge that does not decrypt (or is
 * of another kind), 403 `access_denied` for such a verifier, 401 `request_unauthorized` when expired.
 */

import { openJson, sealJson, TokenError } from '../../core/crypto/jwe.ts';
import type { KeyRing } from '../../core/crypto/keys.ts';
import { AppError } from '../../core/errors.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID } from '../tables.ts';
import type { FlowState, FlowTokenKind } from './states.ts';

export interface FlowCodec {
  seal(kind: FlowTokenKind, state: FlowState): Promise<string>;
  open(kind: FlowTokenKind, token: string): Promise<FlowState>;
}

const requestType = (kind: FlowTokenKind) => (kind.startsWith('login') ? 'login' : 'consent');

/** Hydra's 404 for an unknown challenge. */
export const challengeNotFound = () =>
  new AppError({ status: 404, code: 'Not Found', description: 'Unable to locate the requested resource' });

export function createFlowCodec(ring: KeyRing, ttlMs: number, now: () => Date): FlowCodec {
  return {
    seal(kind, state) {
      // Expiry counts from the authorization request, whichever step made the token.
      const remaining = state.requestedAt * 1000 + ttlMs - now().getTime();
      return sealJson(ring, kind, state, remaining, now().getTime());
    },
    async open(kind, token) {
      const type = requestType(kind);
      const verifier = kind.endsWith('verifier');
      let state: FlowState;
      try {
        state = await openJson<FlowState>(ring, kind, token, now().getTime());
      } catch (e) {
        if (e instanceof TokenError && e.reason === 'expired') {
          return Promise.reject(
            oauth2Error('request_unauthorized', { hint: `The ${type} request has expired, please try again.` }),
          );
        }
        if (!verifier) return Promise.reject(challengeNotFound());
        return Promise.reject(
          oauth2Error('access_denied', {
            hint: `The ${type} verifier has already been used, has not been granted, or is invalid.`,
          }),
        );
      }
      if (state.requestedAt * 1000 + ttlMs < now().getTime()) {
        throw oauth2Error('request_unauthorized', { hint: `The ${type} request has expired, please try again.` });
      }
      if (state.nid !== DEFAULT_NID) {
        return Promise.reject(
          verifier ? oauth2Error('access_denied', { hint: 'Network IDs are not matching.' }) : challengeNotFound(),
        );
      }
      return state;
    },
  };
}
