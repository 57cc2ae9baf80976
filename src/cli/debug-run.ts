/** What `gatehouse debug` runs (loaded by its actions; the definitions are in debug.ts). */
import { readFileSync } from 'node:fs';
import { systemSecrets } from '../container.ts';
import { DecryptError, openJson } from '../core/crypto/aead.ts';
import { peekType } from '../core/crypto/jwe.ts';
import { keyRing } from '../core/crypto/keys.ts';
import { decodeLogoutToken } from '../oauth2/logout/challenge.ts';
import { isPlainSessionData } from '../oauth2/session-data.ts';
import type { GlobalFlags } from './common.ts';
import { configFrom } from './config.ts';

export const readValue = (v: string) => (v === '-' ? readFileSync(0, 'utf8') : v).trim();

function ringOrFail(secrets: string[], purpose: Parameters<typeof keyRing>[1]) {
  if (!secrets.length)
    throw new Error('no secrets.system configured: set SECRETS_SYSTEM (all rotation entries) to decode');
  return keyRing(secrets, purpose);
}

/** The fields of a decoded challenge/verifier, with unix times also shown as ISO dates. */
function withDates(data: unknown): unknown {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return data;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) {
    out[k] = v;
    if (typeof v === 'number' && /(At|Time|_at)$/.test(k) && v > 1_000_000_000 && v < 10_000_000_000) {
      out[`${k}Iso`] = new Date(v * 1000).toISOString();
    }
  }
  return out;
}

export async function decodeChallenge(secrets: string[], value: string, now = Date.now()) {
  const ring = ringOrFail(secrets, 'flow');
  const sealed = await peekType(ring, value);
  if (!sealed) {
    throw new Error(
      'not a gatehouse challenge or verifier: it does not decrypt with any configured secrets.system entry (tampered, truncated, or made with another secret)',
    );
  }
  // Logout challenges and verifiers are decoded by the logout module (it owns their format).
  const logout = await decodeLogoutToken(ring, value);
  return {
    kind: sealed.typ,
    expires_at: new Date(sealed.exp * 1000).toISOString(),
    expired: sealed.exp * 1000 < now,
    flow: withDates(logout ? logout.request : sealed.data),
  };
}

export function decryptSession(secrets: string[], value: string): unknown {
  if (isPlainSessionData(value)) return JSON.parse(value);
  try {
    return openJson(ringOrFail(secrets, 'session'), value);
  } catch (e) {
    if (e instanceof DecryptError || e instanceof SyntaxError) {
      throw new Error(
        'not gatehouse session data: it does not decrypt with any configured secrets.system entry (tampered, truncated, or made with another secret)',
      );
    }
    throw e;
  }
}

/** The `secrets.system` entries of the configuration the global flags name. */
export const secretsOf = (flags: GlobalFlags): string[] => systemSecrets(configFrom(flags));
