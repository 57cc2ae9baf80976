/** `POST /oauth2/token` (oauth2TokenExchange): RFC 6749 JSON, never cached. */
import type { Context } from 'koa';
import { AppError } from '../../core/errors.ts';
import { renderError } from '../../core/http/errors.ts';
import { formFields, noStore } from '../../core/http/params.ts';
import { countTokenResponse } from '../metrics.ts';
import type { TokenService } from './service.ts';

const JSON_UTF8 = 'application/json;charset=UTF-8';

/** Form fields of the OAuth 2.0 endpoints: a repeated `audience` is joined with spaces (fosite accepts both forms). */
/** The form of the token-like endpoints; repeated `audience` and `resource` (RFC 8707) values are joined with spaces. */
export const oauth2Form = (ctx: Context) => formFields(ctx, ['audience', 'resource']);

export function tokenHandlers(service: TokenService, exposeDebug: boolean) {
  async function oauth2TokenExchange(ctx: Context) {
    noStore(ctx);
    try {
      const form = oauth2Form(ctx);
      ctx.body = countTokenResponse(form, await service.exchange(form, ctx.get('authorization') || undefined));
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      renderError(ctx, e, { exposeDebug });
    }
    ctx.type = JSON_UTF8;
  }
  return { oauth2TokenExchange };
}
