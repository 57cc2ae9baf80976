/**
 * `gatehouse debug challenge <value>` and `gatehouse debug encrypted-session <value>`.
 * Both read `secrets.system` (every rotation entry) from the usual configuration and
 * print JSON; a value that is tampered with, foreign or made with an unknown secret exits 1 with one
 * line. `-` reads the value from standard input.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { systemSecrets } from '../container.ts';
import { DecryptError, openJson } from '../core/crypto/aead.ts';
import { peekType } from '../core/crypto/jwe.ts';
import { keyRing } from '../core/crypto/keys.ts';
import { decodeLogoutToken } from '../oauth2/logout/challenge.ts';
import { isPlainSessionData } from '../oauth2/session-data.ts';
import { configFrom, type GlobalFlags, run } from './common.ts';

const readValue = (v: string) => (v === '-' ? readFileSync(0, 'utf8') : v).trim();

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

export function registerDebug(program: Command): void {
  const d = program.command('debug').description('Decode gatehouse values (enterprise debugging)');
  d.command('challenge')
    .argument('<value>', 'a login, consent or logout challenge or verifier (`-` reads stdin)')
    .description('Decrypt a challenge or verifier and print the flow it carries as JSON')
    .action((value: string) =>
      run(async () => {
        const out = await decodeChallenge(systemSecrets(configFrom(program.opts<GlobalFlags>())), readValue(value));
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      }),
    );
  d.command('encrypted-session')
    .argument('<value>', 'an encrypted session value as stored in the database (`-` reads stdin)')
    .description('Decrypt session data kept in the database (consent session claims, token sessions)')
    .action((value: string) =>
      run(async () => {
        const out = decryptSession(systemSecrets(configFrom(program.opts<GlobalFlags>())), readValue(value));
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      }),
    );
}
