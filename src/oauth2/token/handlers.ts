/** `POST /oauth2/token` (oauth2TokenExchange): RFC 6749 JSON, never cached. */
import type { Context } from 'koa';
import { AppError } from '../../core/errors.ts';
import { renderError } from '../../core/http/errors.ts';
import { formFields, noStore } from '../../core/http/params.ts';
import { countTokenResponse } from '../metrics.ts';
import type { ClientCertificates } from '../mtls.ts';
import type { TokenService } from './service.ts';

const JSON_UTF8 = 'application/json;charset=UTF-8';

/** The form of the token-like endpoints; a repeated `audience` (fosite accepts both forms) or `resource` (RFC 8707) is joined with spaces. */
export const oauth2Form = (ctx: Context) => formFields(ctx, ['audience', 'resource']);

export function tokenHandlers(
  service: TokenService,
  exposeDebug: boolean,
  dpopNonce: () => string | undefined,
  certificates: ClientCertificates,
) {
  async function oauth2TokenExchange(ctx: Context) {
    noStore(ctx);
    // RFC 9449 §8: while nonces are required, every answer carries the current one.
    const nonce = dpopNonce();
    if (nonce) ctx.set('DPoP-Nonce', nonce);
    try {
      const form = oauth2Form(ctx);
      const proof = ctx.get('dpop') || undefined;
      const authorization = ctx.get('authorization') || undefined;
      const answer = await service.exchange(form, authorization, proof, certificates.of(ctx));
      ctx.body = countTokenResponse(form, answer);
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      renderError(ctx, e, { exposeDebug });
    }
    ctx.type = JSON_UTF8;
  }
  return { oauth2TokenExchange };
}
