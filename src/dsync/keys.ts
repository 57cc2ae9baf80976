/**
 * The keys directory sync derives from `secrets.system` for itself (src/core/crypto/keys.ts), by
 * their HKDF labels. A label is part of every value sealed under its key: renaming one makes those
 * values unreadable.
 */
import { domainKeyPurpose } from '../core/crypto/keys.ts';

export const DSYNC_KEY_PURPOSES = {
  /** Directory-sync secrets at rest (cloud tokens, webhook secrets). */
  secrets: domainKeyPurpose('dsync'),
  /** Signed authorization links (starting a cloud directory authorization). */
  links: domainKeyPurpose('dsync_link'),
} as const;
