/**
 * Session data at rest (consent claims, grant sessions): sealed with AES-GCM under
 * `keyRing(secrets.system, 'session')` when `oauth2.session.encrypt_at_rest` is on, plain JSON
 * otherwise. Reading accepts both, so turning the flag on or off keeps old rows readable.
 */
import { openJson, sealJson } from '../core/crypto/aead.ts';
import type { KeyRing } from '../core/crypto/keys.ts';

export interface SessionCodec {
  seal(value: unknown): string;
  open<T>(stored: string): T;
}

/** Whether a stored value is plain JSON (written with `encrypt_at_rest` off) rather than sealed. */
export const isPlainSessionData = (stored: string): boolean => stored.startsWith('{') || stored.startsWith('[');

export function createSessionCodec(ring: KeyRing, encrypt: boolean): SessionCodec {
  return {
    seal: (value) => (encrypt ? sealJson(ring, value) : JSON.stringify(value)),
    open: <T>(stored: string): T =>
      isPlainSessionData(stored) ? (JSON.parse(stored) as T) : openJson<T>(ring, stored),
  };
}
