/** The CookieJar services use, over Koa's cookies, with gatehouse's cookie settings. */
import type { Context } from 'koa';
import { cookieOptions, cookiesSecure } from '../core/http/cookies.ts';
import type { OAuth2Config } from './deps.ts';
import type { CookieJar } from './flows/cookies.ts';

export function koaCookieJar(ctx: Context, config: OAuth2Config): CookieJar {
  const secure = cookiesSecure(config);
  let sameSite = config.serve.cookies.same_site_mode.toLowerCase() as 'lax' | 'strict' | 'none';
  if (sameSite === 'none' && (!secure || !config.urls.self.issuer.startsWith('https:'))) sameSite = 'lax';
  const options = (path = '/') => cookieOptions(ctx, { secure, sameSite, path, domain: config.serve.cookies.domain });
  return {
    get: (name) => ctx.cookies.get(name),
    set: (name, value, opts = {}) =>
      ctx.cookies.set(name, value, {
        ...options(opts.path),
        ...(opts.maxAgeMs !== undefined ? { maxAge: opts.maxAgeMs } : {}),
      }),
    clear: (name, opts = {}) => ctx.cookies.set(name, null, options(opts.path)),
  };
}
