/** `GET|POST /oauth2/auth` (oAuth2Authorize). */
import type { Context } from 'koa';
import { cspSource, sendHtml } from '../../core/http/html.ts';
import { noStore } from '../../core/http/params.ts';
import { koaCookieJar } from '../cookie-jar.ts';
import type { OAuth2Config } from '../deps.ts';
import { formPostHtml } from './respond.ts';
import type { AuthorizeService } from './service.ts';

/** Query and form parameters; a repeated parameter keeps its first value, `audience` joins them. */
export function requestParams(ctx: Context): Record<string, string> {
  const out: Record<string, string> = {};
  const body = ctx.method === 'POST' && typeof ctx.request.body === 'object' ? ctx.request.body : {};
  for (const src of [ctx.query, body as Record<string, unknown>]) {
    for (const [k, v] of Object.entries(src ?? {})) {
      const values = (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
      if (!values.length) continue;
      if (k === 'audience') out[k] = [out[k], ...values].filter(Boolean).join(' ');
      else if (out[k] === undefined) out[k] = values[0] as string;
    }
  }
  return out;
}

export function authorizeHandlers(service: AuthorizeService, config: OAuth2Config) {
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
  return { oAuth2Authorize };
}
