/**
 * Key purposes (src/core/crypto/keys.ts): a domain declares its own beside the core's, never with a
 * label the core or another domain uses (two uses would share one key), and the labels directory
 * sync has always used still derive the same keys (what was sealed under them stays readable).
 */
import { createHash, hkdfSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deriveKey, distinctPurposes, domainKeyPurpose } from '../../../src/core/crypto/keys.ts';
import { DSYNC_KEY_PURPOSES } from '../../../src/dsync/keys.ts';

/** HKDF-SHA256 as the keys have been derived since the first release: salt `gatehouse/v1`, info `gatehouse:<label>`. */
const hkdf = (secret: string, label: string) =>
  Buffer.from(
    hkdfSync('sha256', Buffer.from(secret), Buffer.from('gatehouse/v1'), Buffer.from(`gatehouse:${label}`), 32),
  );

describe('key purposes', () => {
  it('directory sync’s purposes keep their labels, so its sealed secrets and links stay readable', () => {
    const secret = 'a-system-secret-of-thirty-two-chars!';
    for (const [purpose, label] of [
      [DSYNC_KEY_PURPOSES.secrets, 'dsync'],
      [DSYNC_KEY_PURPOSES.links, 'dsync_link'],
    ] as const) {
      const k = deriveKey(secret, purpose);
      expect(k.key.equals(hkdf(secret, label))).toBe(true);
      expect(k.id).toBe(createHash('sha256').update(hkdf(secret, label)).digest('base64url').slice(0, 8));
    }
  });

  it('a domain may not take a label of the core, nor a malformed one', () => {
    expect(() => domainKeyPurpose('flow')).toThrow(/one of the core's/);
    expect(() => domainKeyPurpose('console')).toThrow(/one of the core's/);
    expect(() => domainKeyPurpose('Flow Keys')).toThrow(/lower-case/);
    expect(domainKeyPurpose('reports')).toBe('reports');
  });

  it('two domains may not declare one label', () => {
    expect(() => distinctPurposes([domainKeyPurpose('a'), domainKeyPurpose('b'), domainKeyPurpose('a')])).toThrow(
      /declared twice/,
    );
    expect(() => distinctPurposes(Object.values(DSYNC_KEY_PURPOSES))).not.toThrow();
  });
});
