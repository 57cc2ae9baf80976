/**
 * User codes (RFC 8628 §6.1) with Hydra's settings: `oauth2.device_authorization.user_code.*`
 * presets `high` (8 characters of Hydra's unambiguous alphabet, ~45 bits), `medium` (8 upper-case
 * letters, ~37 bits), `low` (9 digits, ~30 bits), or an explicit length and character set. A code
 * is stored only as its HMAC-SHA256 under a key derived from each system secret (rotation).
 */
import { createHmac } from 'node:crypto';
import { deriveKey, secretKey } from '../../core/crypto/keys.ts';
import { randomString } from '../../core/crypto/random.ts';
import type { OAuth2Config } from '../deps.ts';

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** Hydra's randx.AlphaNumNoAmbiguous: no 0 O o 1 I l B 8 S 5 Z 2. */
export const ALPHANUM_NO_AMBIGUOUS = 'abcdefghijkmnpqrstuvwxyzACDEFGHJKLMNPQRTUVWXY34679';
const PRESETS = {
  high: { length: 8, alphabet: ALPHANUM_NO_AMBIGUOUS },
  medium: { length: 8, alphabet: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' },
  low: { length: 9, alphabet: '0123456789' },
} as const;

export interface UserCodes {
  generate(): { code: string; signatures: string[] };
  /** One signature per configured secret (the first is the current one). */
  signatures(code: string): string[];
}

export function createUserCodes(config: OAuth2Config): UserCodes {
  const uc = config.oauth2.device_authorization.user_code;
  const preset = PRESETS[uc.entropy_preset];
  const length = uc.length > 0 ? uc.length : preset.length;
  const alphabet = uc.character_set || preset.alphabet;
  const keys = config.secrets.system.map((s) => secretKey(deriveKey(s, 'flow').key));
  const signatures = (code: string) =>
    keys.map((k) => createHmac('sha256', k).update(`user_code:${code}`, 'utf8').digest('base64url'));
  return {
    generate() {
      const code = randomString(length, [...new Set(alphabet)].join(''));
      return { code, signatures: signatures(code) };
    },
    signatures,
  };
}
