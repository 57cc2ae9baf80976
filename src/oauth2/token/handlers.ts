/** `POST /oauth2/token` (oauth2TokenExchange): RFC 6749 JSON, never cached. */
import type { Context } from 'koa';
import { AppError } from '../../core/errors.ts';
import { renderError } from '../../core/http/errors.ts';
import { countTokenResponse } from '../../core/observability/oauth2.ts';
import type { TokenService } from './service.ts';

const JSON_UTF8 = 'application/json;charset=UTF-8';

/**
 * Form fields as single strings: a repeated field keeps its first value, except `audience`, whose
 * repeated values are joined with spaces (fosite accepts both forms).
 */
export function formFields(ctx: Context): Record<string, string> {
  const body = ctx.request.body;
  const out: Record<string, string> = {};
  if (!body || typeof body !== 'object') return out;
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    if (k === 'audience' && Array.isArray(v)) {
      out[k] = v.filter((x) => typeof x === 'string').join(' ');
      continue;
    }
    const first = Array.isArray(v) ? v[0] : v;
    if (typeof first === 'string') out[k] = first;
  }
  return out;
}

export function tokenHandlers(service: TokenService, exposeDebug: boolean) {
  async function oauth2TokenExchange(ctx: Context) {
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    try {
      const form = formFields(ctx);
      ctx.body = countTokenResponse(form, await service.exchange(form, ctx.get('authorization') || undefined));
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      renderError(ctx, e, { exposeDebug });
    }
    ctx.type = JSON_UTF8;
  }
  return { oauth2TokenExchange };
}
