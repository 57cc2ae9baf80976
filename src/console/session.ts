/**
 * The console's cookies: the operator session (`gatehouse_console`) and the short-lived sign-in
 * state (`gatehouse_console_signin`: OAuth `state`, OIDC `nonce`, PKCE verifier, return path). Both
 * are JWE (`dir` + A256GCM) under a key derived from `secrets.system` for the console, so the
 * browser can neither read nor forge them; the first system secret encrypts, every one decrypts
 * (rotation). Both are HttpOnly, SameSite=Lax, limited to `/console`, and Secure when the admin
 * listener is reached over https.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { decodeProtectedHeader, EncryptJWT, jwtDecrypt } from 'jose';
import type { Context } from 'koa';
import type { Clock } from '../core/clock.ts';
import { keyRing } from '../core/crypto/keys.ts';
import { cookieOptions } from '../core/http/cookies.ts';

export const SESSION_COOKIE = 'gatehouse_console';
export const SIGNIN_COOKIE = 'gatehouse_console_signin';
const PATH = '/console';

export interface ConsoleSession {
  /** The operator's subject (the ID token's `sub`). */
  sub: string;
  /** The session's CSRF token (every form posts it back). */
  csrf: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
}

export interface SignInState {
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
}

/** Constant-time equality of two strings of any length (compares their SHA-256 digests). */
export function sameSecret(a: string, b: string): boolean {
  const h = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(h(a), h(b));
}

export const randomToken = () => randomBytes(32).toString('base64url');

export function createCookieSealer(secrets: readonly string[], clock: Clock, secure: boolean) {
  const ring = keyRing(secrets, 'console');
  const nowSec = () => Math.floor(clock.now().getTime() / 1000);

  async function seal(payload: Record<string, unknown>, ttlSec: number): Promise<string> {
    const now = nowSec();
    return new EncryptJWT(payload)
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: ring.current.id })
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSec)
      .encrypt(ring.current.key);
  }

  async function open(token: string | undefined): Promise<Record<string, unknown> | undefined> {
    if (!token) return undefined;
    try {
      const kid = decodeProtectedHeader(token).kid;
      const key = typeof kid === 'string' ? ring.byId(kid) : undefined;
      if (!key) return undefined;
      const { payload } = await jwtDecrypt(token, key.key, {
        currentDate: clock.now(),
        keyManagementAlgorithms: ['dir'],
        contentEncryptionAlgorithms: ['A256GCM'],
      });
      return payload as Record<string, unknown>;
    } catch {
      return undefined;
    }
  }

  const cookie = (ctx: Context, maxAgeSec: number) => ({
    ...cookieOptions(ctx, { secure, sameSite: 'lax', path: PATH }),
    maxAge: maxAgeSec * 1000,
  });

  return {
    /** The secret of the console's own OAuth 2.0 client: derived, so every process computes the same one. */
    clientSecret: () =>
      createHmac('sha256', ring.current.key).update('gatehouse-console client secret').digest('base64url'),

    async startSession(ctx: Context, sub: string, ttlSec: number): Promise<ConsoleSession> {
      const s = { sub, csrf: randomToken(), exp: nowSec() + ttlSec };
      ctx.cookies.set(SESSION_COOKIE, await seal({ sub: s.sub, csrf: s.csrf }, ttlSec), cookie(ctx, ttlSec));
      return s;
    },

    async readSession(ctx: Context): Promise<ConsoleSession | undefined> {
      const p = await open(ctx.cookies.get(SESSION_COOKIE));
      if (!p || typeof p.sub !== 'string' || typeof p.csrf !== 'string' || typeof p.exp !== 'number') return undefined;
      return { sub: p.sub, csrf: p.csrf, exp: p.exp };
    },

    endSession(ctx: Context): void {
      ctx.cookies.set(SESSION_COOKIE, '', { ...cookie(ctx, 0), expires: new Date(0) });
    },

    async startSignIn(ctx: Context, s: SignInState, ttlSec: number): Promise<void> {
      ctx.cookies.set(SIGNIN_COOKIE, await seal({ ...s }, ttlSec), cookie(ctx, ttlSec));
    },

    /** The pending sign-in (and forgets it: a state answers one callback only). */
    async takeSignIn(ctx: Context): Promise<SignInState | undefined> {
      const p = await open(ctx.cookies.get(SIGNIN_COOKIE));
      ctx.cookies.set(SIGNIN_COOKIE, '', { ...cookie(ctx, 0), expires: new Date(0) });
      if (!p) return undefined;
      const { state, nonce, verifier, returnTo } = p;
      if (typeof state !== 'string' || typeof nonce !== 'string' || typeof verifier !== 'string') return undefined;
      return { state, nonce, verifier, returnTo: typeof returnTo === 'string' ? returnTo : PATH };
    },
  };
}

export type CookieSealer = ReturnType<typeof createCookieSealer>;
