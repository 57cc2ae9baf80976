/**
 * The console's cookies: the operator session (`gatehouse_console`) and the short-lived sign-in
 * state (`gatehouse_console_signin`: OAuth `state`, OIDC `nonce`, PKCE verifier, return path). Both
 * are JWE (`dir` + A256GCM) under a key derived from `secrets.system` for the console, so the
 * browser can neither read nor forge them; the first system secret encrypts, every one decrypts
 * (rotation). Both are HttpOnly, SameSite=Lax, limited to `/console`, and Secure when the admin
 * listener is reached over https.
 *
 * The session cookie carries a random session id besides the subject and the CSRF token; the
 * session lives only while its row in `console_sessions` does (sessions.ts), so ending it on the
 * server ends every copy of the cookie.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { decodeProtectedHeader, EncryptJWT, jwtDecrypt } from 'jose';
import type { Context } from 'koa';
import type { Clock } from '../core/clock.ts';
import { keyRing } from '../core/crypto/keys.ts';
import { cookieOptions } from '../core/http/cookies.ts';
import { createConsoleSessions } from './sessions.ts';
import type { Db } from './tables.ts';

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

export function createCookieSealer(secrets: readonly string[], clock: Clock, secure: boolean, db: Db) {
  const ring = keyRing(secrets, 'console');
  const sessions = createConsoleSessions(db, clock);
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

    /** Records a new session of `sub` (and deletes expired ones) and sets its cookie. */
    async startSession(ctx: Context, sub: string, ttlSec: number): Promise<ConsoleSession> {
      const { id } = await sessions.create(sub, ttlSec);
      const s = { sub, csrf: randomToken(), exp: nowSec() + ttlSec };
      ctx.cookies.set(SESSION_COOKIE, await seal({ sid: id, sub: s.sub, csrf: s.csrf }, ttlSec), cookie(ctx, ttlSec));
      return s;
    },

    /**
     * The session of the request's cookie: the cookie must open (key, seal, its own expiry) and its
     * session's row must exist, be unexpired and name the same subject (one read by primary key).
     */
    async readSession(ctx: Context): Promise<ConsoleSession | undefined> {
      const p = await open(ctx.cookies.get(SESSION_COOKIE));
      if (!p || typeof p.sid !== 'string' || typeof p.sub !== 'string' || typeof p.csrf !== 'string') return undefined;
      if (typeof p.exp !== 'number') return undefined;
      const row = await sessions.find(p.sid);
      if (!row || row.subject !== p.sub) return undefined;
      return { sub: p.sub, csrf: p.csrf, exp: Math.min(p.exp, Math.floor(row.expiresAt.getTime() / 1000)) };
    },

    /**
     * Signs this browser out: clears the cookie at once and deletes the session's row. Sign-out
     * awaits it (a failure is an error page: the session may still be valid). A caller that does not
     * await it (the guard, for a subject no longer an operator, who is refused anyway) leaves no
     * unhandled rejection: the promise has a handler of its own.
     */
    endSession(ctx: Context): Promise<void> {
      const token = ctx.cookies.get(SESSION_COOKIE);
      ctx.cookies.set(SESSION_COOKIE, '', { ...cookie(ctx, 0), expires: new Date(0) });
      const done = (async () => {
        const p = await open(token);
        if (p && typeof p.sid === 'string') await sessions.end(p.sid);
      })();
      done.catch(() => {});
      return done;
    },

    /** "Sign out everywhere": ends every session of `sub` (this one included) and clears this cookie. */
    async endAllSessions(ctx: Context, sub: string): Promise<number> {
      ctx.cookies.set(SESSION_COOKIE, '', { ...cookie(ctx, 0), expires: new Date(0) });
      return sessions.endAll(sub);
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
