/**
 * The one way gatehouse sets a cookie: HttpOnly, `Secure` per `serve.cookies.secure` (always off
 * with `dev: true`), overwriting an earlier value of the same name in the response.
 */
import type { Context } from 'koa';

type SameSite = 'lax' | 'strict' | 'none';

/** Whether gatehouse's cookies carry `Secure`: `serve.cookies.secure`, never with `dev`. */
export const cookiesSecure = (config: { serve: { cookies: { secure: boolean } }; dev: boolean }): boolean =>
  config.serve.cookies.secure && !config.dev;

export interface CookieAttributes {
  secure: boolean;
  sameSite: SameSite;
  path: string;
  domain?: string | undefined;
}

/** The options of `ctx.cookies.set` for a gatehouse cookie (add `maxAge` for a persistent one). */
export function cookieOptions(ctx: Context, a: CookieAttributes) {
  // Koa refuses Secure cookies on plain HTTP; TLS usually ends at a proxy in front of gatehouse.
  if (a.secure) (ctx.cookies as unknown as { secure: boolean }).secure = true;
  return {
    httpOnly: true,
    secure: a.secure,
    sameSite: a.sameSite,
    path: a.path,
    overwrite: true,
    ...(a.domain ? { domain: a.domain } : {}),
  };
}
