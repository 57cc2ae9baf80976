/** The CookieJar services use, over Koa's cookies, with gatehouse's cookie settings. */
import type { Context } from 'koa';
import type { Config } from '../core/config/load.ts';
import type { CookieJar } from './flows/cookies.ts';

export function koaCookieJar(ctx: Context, config: Config): CookieJar {
  const secure = config.serve.cookies.secure && !config.dev;
  let sameSite = config.serve.cookies.same_site_mode.toLowerCase() as 'lax' | 'strict' | 'none';
  if (sameSite === 'none' && (!secure || !config.urls.self.issuer.startsWith('https:'))) sameSite = 'lax';
  // Koa refuses Secure cookies on plain HTTP; TLS usually ends at a proxy in front of gatehouse.
  if (secure) (ctx.cookies as unknown as { secure: boolean }).secure = true;
  const base = {
    httpOnly: true,
    secure,
    sameSite,
    overwrite: true,
    ...(config.serve.cookies.domain ? { domain: config.serve.cookies.domain } : {}),
  };
  return {
    get: (name) => ctx.cookies.get(name),
    set: (name, value, opts = {}) =>
      ctx.cookies.set(name, value, {
        ...base,
        path: opts.path ?? '/',
        ...(opts.maxAgeMs !== undefined ? { maxAge: opts.maxAgeMs } : {}),
      }),
    clear: (name, opts = {}) => ctx.cookies.set(name, null, { ...base, path: opts.path ?? '/' }),
  };
}
