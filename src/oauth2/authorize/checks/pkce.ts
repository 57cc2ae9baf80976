/**
 * PKCE at the authorization endpoint (RFC 7636). Only `S256` is accepted unless
 * `oauth2.pkce.allow_plain`, as in Hydra 26 (fosite's `EnablePKCEPlainChallengeMethod` is off there):
 * `plain` protects nothing once the authorization request is seen (RFC 7636 §7.2), and a client
 * that can do S256 must use it (§4.2). A challenge without a method means `plain` (§4.3), so it is
 * refused too. `oauth2.pkce.enforced` requires a challenge from every client,
 * `enforced_for_public_clients` from clients with `token_endpoint_auth_method: none`.
 */
import { createHash } from 'node:crypto';
import { safeEqual } from '../../../core/crypto/random.ts';
import { oauth2Error } from '../../oauth-errors.ts';

export interface PkcePolicy {
  enforced: boolean;
  enforcedForPublicClients: boolean;
  /** `oauth2.pkce.allow_plain`. */
  allowPlain: boolean;
}

/** The challenge method check of fosite's PKCE handler (its hints), at both endpoints. */
function checkMethod(policy: PkcePolicy, method: string): void {
  if (method === 'S256') return;
  if (method !== '' && method !== 'plain') {
    throw oauth2Error('invalid_request', { hint: 'The code_challenge_method is not supported, use S256 instead.' });
  }
  if (!policy.allowPlain) {
    throw oauth2Error('invalid_request', {
      hint: 'Clients must use code_challenge_method=S256, plain is not allowed.',
      debug: 'The server is configured in a way that enforces PKCE S256 as challenge method for clients.',
    });
  }
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
  checkMethod(policy, method);
  return { codeChallenge: challenge, codeChallengeMethod: method || 'plain' };
}

const VERIFIER = /^[A-Za-z0-9._~-]+$/;

/**
 * Token endpoint side: the verifier must match the challenge stored with the code. The method is
 * checked again (as fosite does), so a `plain` code issued before `allow_plain` was turned off is
 * refused.
 */
export function verifyPkce(policy: PkcePolicy, isPublic: boolean, challenge: string, method: string, verifier: string) {
  if (!challenge) {
    if (!verifier) {
      checkPkceRequest(policy, isPublic, '', '');
      return;
    }
    throw oauth2Error('invalid_grant', { hint: 'Unable to find initial PKCE data tied to this request' });
  }
  checkMethod(policy, method);
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
