/**
 * Private keys at rest: each JWK is sealed with AES-256-GCM under the `jwk` key derived from
 * secrets.system (src/core/crypto). The first secret seals; every listed secret can open, so
 * rotating `secrets.system` (new secret first, old ones after) keeps existing keys readable. The
 * network, set and kid are bound in as associated data, so a sealed key cannot be moved to another
 * set or kid in the database.
 */
import { DecryptError, open, seal } from '../../core/crypto/aead.ts';
import { type KeyRing, keyRing } from '../../core/crypto/keys.ts';
import { AppError, HERODOT } from '../../core/errors.ts';
import type { JwkRow, NewJwkRow } from '../store/jwks.ts';
import { type Jwk, normaliseJwk } from './keys.ts';

export interface KeySealer {
  seal(sid: string, jwk: Jwk & { kid: string }, now: Date): NewJwkRow;
  open(row: JwkRow): Jwk;
}

const aad = (nid: string, sid: string, kid: string) => `gatehouse/jwk/${nid}/${sid}/${kid}`;

function unreadable(sid: string): AppError {
  return new AppError({
    status: 500,
    code: HERODOT.internal,
    description: `The JSON Web Key set ${sid} cannot be decrypted with any secret in secrets.system. Keep the secret that encrypted it in the list (new secret first, old secrets after) or delete and recreate the set.`,
  });
}

export function createKeySealer(secrets: readonly string[], nid: string): KeySealer {
  let ring: KeyRing | undefined;
  const getRing = () => (ring ??= keyRing(secrets, 'jwk'));
  return {
    seal(sid, jwk, now) {
      return {
        sid,
        kid: jwk.kid,
        keydata: seal(getRing(), JSON.stringify(jwk), aad(nid, sid, jwk.kid)),
        created_at: now,
      };
    },
    open(row) {
      try {
        return normaliseJwk(JSON.parse(open(getRing(), row.keydata, aad(nid, row.sid, row.kid))));
      } catch (e) {
        if (e instanceof DecryptError) throw unreadable(row.sid);
        throw e;
      }
    },
  };
}
