/**
 * Per-client CORS origins (Hydra's OAuth2-aware CORS middleware): on the routes whose policy says
 * `cors: 'per-client'` (token, revocation, userinfo, credentials, discovery and JWKS), an origin that `serve.public.cors` does not
 * allow is allowed when the client behind the request lists it in `allowed_cors_origins`. The
 * client is named by the form's `client_id` (client_secret_post), else the Basic user name
 * (client_secret_basic), else the client an access token (Bearer header or `access_token`
 * parameter) was issued to. Nothing is authenticated here: the endpoint itself still checks the
 * credentials; a wrong secret only gets CORS headers on its error.
 */
import type { Context } from 'koa';
import type { PerClientCors } from '../core/http/cors.ts';
import { bearerToken as bearerOf, firstValue } from '../core/http/params.ts';
import type { ClientService } from './clients/service.ts';
import { basicCredentials } from './token/client-auth.ts';
import type { TokenLookup } from './token/lookup.ts';

/** The form body only (as Go's PostFormValue): a JSON body names no client. */
const formBody = (ctx: Context): Record<string, unknown> | undefined =>
  ctx.is('application/x-www-form-urlencoded') ? (ctx.request.body as Record<string, unknown> | undefined) : undefined;

function bearerToken(ctx: Context): string | undefined {
  const bearer = bearerOf(ctx.get('authorization'));
  if (bearer !== undefined) return bearer;
  return firstValue(formBody(ctx)?.access_token) || firstValue(ctx.query.access_token) || undefined;
}

export function createPerClientCors(d: {
  clients: Pick<ClientService, 'getClient'>;
  lookup: TokenLookup;
  now: () => Date;
}): PerClientCors {
  async function clientId(ctx: Context): Promise<string | undefined> {
    const posted = firstValue(formBody(ctx)?.client_id);
    if (posted) return posted;
    let basic: { id: string } | undefined;
    try {
      basic = basicCredentials(ctx.get('authorization'));
    } catch {
      basic = undefined;
    }
    if (basic?.id) return basic.id;
    const token = bearerToken(ctx);
    if (!token) return undefined;
    const found = await d.lookup.find(token, false);
    if (found?.use !== 'access_token') return undefined;
    const exp = found.row.expiresAt;
    return exp && exp.getTime() <= d.now().getTime() ? undefined : found.row.clientId;
  }
  return {
    async origins(ctx) {
      const id = await clientId(ctx);
      if (!id) return [];
      const c = await d.clients.getClient(id);
      return c?.allowed_cors_origins ?? [];
    },
  };
}
