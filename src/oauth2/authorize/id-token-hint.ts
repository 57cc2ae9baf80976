/** `id_token_hint`: an ID token gatehouse issued (signature checked, expiry ignored, as Hydra). */
import { createLocalJWKSet, errors, jwtVerify } from 'jose';
import { oauth2Error } from '../oauth-errors.ts';
import type { KeyPort } from '../ports.ts';

export async function idTokenHintClaims(keys: KeyPort, hint: string): Promise<Record<string, unknown>> {
  const jwks = createLocalJWKSet({ keys: await keys.publicKeys('hydra.openid.id-token') });
  try {
    const { payload } = await jwtVerify(hint, jwks);
    return payload as Record<string, unknown>;
  } catch (e) {
    if (e instanceof errors.JWTExpired) return e.payload as Record<string, unknown>;
    throw oauth2Error('invalid_request', {
      hint: 'Failed to validate OpenID Connect request as decoding id token from id_token_hint parameter failed.',
      debug: (e as Error).message,
    });
  }
}

export function hintSubject(claims: Record<string, unknown>): string {
  const sub = typeof claims.sub === 'string' ? claims.sub : '';
  if (!sub) {
    throw oauth2Error('invalid_request', {
      hint: 'Failed to validate OpenID Connect request because provided id token from id_token_hint does not have a subject.',
    });
  }
  return sub;
}
