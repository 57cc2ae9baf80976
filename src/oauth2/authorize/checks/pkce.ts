/**
 * PKCE at the authorization endpoint (RFC 7636). `S256` and `plain` are both accepted (Hydra rejects
 * `plain`; gatehouse follows the RFC, which allows it, and discovery advertises it). A challenge
 * without a method means `plain` (RFC 7636 §4.3). `oauth2.pkce.enforced` requires a challenge from
 * every client, `enforced_for_public_clients` from clients with `token_endpoint_auth_method: none`.
 */
import { createHash } from 'node:crypto';
import { safeEqual } from '../../../core/crypto/random.ts';
import { oauth2Error } from '../../oauth-errors.ts';

export interface PkcePolicy {
  enforced: boolean;
  enforcedForPublicClients: boolean;
}

export function checkPkceRequest(
  policy: PkcePolicy,
  isPublic: boolean,
  challenge: string,
  method: string,
): { codeChallenge: string; codeChallengeMethod: string } {
  if (!challenge) {
    if (policy.enforced) {
      throw oauth2Error('invalid_request', {
        hint: 'Clients must include a code_challenge when performing the authorize code flow, but it is missing.',
        debug: 'The server is configured in a way that enforces PKCE for clients.',
      });
    }
    if (policy.enforcedForPublicClients && isPublic) {
      throw oauth2Error('invalid_request', {
        hint: 'This client must include a code_challenge when performing the authorize code flow, but it is missing.',
        debug: 'The server is configured in a way that enforces PKCE for this client.',
      });
    }
    return { codeChallenge: '', codeChallengeMethod: '' };
  }
  if (method !== '' && method !== 'S256' && method !== 'plain') {
    throw oauth2Error('invalid_request', { hint: 'The code_challenge_method is not supported, use S256 instead.' });
  }
  return { codeChallenge: challenge, codeChallengeMethod: method || 'plain' };
}

const VERIFIER = /^[A-Za-z0-9._~-]+$/;

/** Token endpoint side: the verifier must match the challenge stored with the code. */
export function verifyPkce(policy: PkcePolicy, isPublic: boolean, challenge: string, method: string, verifier: string) {
  if (!challenge) {
    if (!verifier) {
      checkPkceRequest(policy, isPublic, '', '');
      return;
    }
    throw oauth2Error('invalid_grant', { hint: 'Unable to find initial PKCE data tied to this request' });
  }
  if (verifier.length < 43) {
    throw oauth2Error('invalid_grant', { hint: 'The PKCE code verifier must be at least 43 characters.' });
  }
  if (verifier.length > 128) {
    throw oauth2Error('invalid_grant', { hint: 'The PKCE code verifier can not be longer than 128 characters.' });
  }
  if (!VERIFIER.test(verifier)) {
    throw oauth2Error('invalid_grant', {
      hint: "The PKCE code verifier must only contain [a-Z], [0-9], '-', '.', '_', '~'.",
    });
  }
  const computed = method === 'S256' ? createHash('sha256').update(verifier, 'ascii').digest('base64url') : verifier;
  if (!safeEqual(computed, challenge)) {
    throw oauth2Error('invalid_grant', { hint: 'The PKCE code challenge did not match the code verifier.' });
  }
}
