/** `GET|POST /oauth2/auth` (oAuth2Authorize) and `POST /oauth2/par` (pushAuthorizationRequest). */
import type { Context } from 'koa';
import { AppError } from '../../core/errors.ts';
import { renderError } from '../../core/http/errors.ts';
import { cspSource, sendHtml } from '../../core/http/html.ts';
import { noStore } from '../../core/http/params.ts';
import { koaCookieJar } from '../cookie-jar.ts';
import type { OAuth2Config } from '../deps.ts';
import type { ClientCertificates } from '../mtls.ts';
import { oauth2Form } from '../token/handlers.ts';
import type { PushedRequests } from './pushed.ts';
import { formPostHtml } from './respond.ts';
import type { AuthorizeService } from './service.ts';

/** Query and form parameters; a repeated parameter keeps its first value, `audience` and `resource` join them. */
export function requestParams(ctx: Context): Record<string, string> {
  const out: Record<string, string> = {};
  const body = ctx.method === 'POST' && typeof ctx.request.body === 'object' ? ctx.request.body : {};
  for (const src of [ctx.query, body as Record<string, unknown>]) {
    for (const [k, v] of Object.entries(src ?? {})) {
      const values = (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
      if (!values.length) continue;
      if (k === 'audience' || k === 'resource') out[k] = [out[k], ...values].filter(Boolean).join(' ');
      else if (out[k] === undefined) out[k] = values[0] as string;
    }
  }
  return out;
}

export function authorizeHandlers(
  service: AuthorizeService,
  pushed: PushedRequests,
  config: OAuth2Config,
  certificates: ClientCertificates,
) {
  /** RFC 9126 §2: 201 `{request_uri, expires_in}`, or an error as the token endpoint answers it. */
  async function pushAuthorizationRequest(ctx: Context) {
    if (!config.oauth2.pushed_authorization_requests.enabled) {
      ctx.status = 404;
      return;
    }
    noStore(ctx);
    try {
      ctx.body = await pushed.push(
        oauth2Form(ctx),
        ctx.get('authorization') || undefined,
        ctx.get('dpop') || undefined,
        certificates.of(ctx),
      );
      ctx.status = 201;
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      renderError(ctx, e, { exposeDebug: config.oauth2.expose_internal_errors });
    }
    ctx.type = 'application/json;charset=UTF-8';
  }

  async function oAuth2Authorize(ctx: Context) {
    const outcome = await service.authorize(requestParams(ctx), koaCookieJar(ctx, config));
    if (outcome.aborted) {
      // Aborting a request by redirecting is the endpoint working as designed, not a failure.
      const level = outcome.aborted.status >= 500 ? 'error' : 'info';
      ctx.state.log?.[level]({ error: outcome.aborted.error }, 'authorization request aborted with a redirect');
    }
    noStore(ctx);
    if (outcome.kind === 'form_post') {
      const { action, fields } = outcome;
      const target = cspSource(action);
      sendHtml(ctx, (nonce) => formPostHtml(action, fields, nonce), { formAction: target ? [target] : [] });
      return;
    }
    ctx.status = outcome.status;
    ctx.set('Location', outcome.location);
    ctx.body = '';
  }
  return { oAuth2Authorize, pushAuthorizationRequest };
}
