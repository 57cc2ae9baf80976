/**
 * Public listener: OpenID Connect Dynamic Client Registration (`/oauth2/register…`), named after
 * Hydra's operation ids.
 */
import type { Context, Next } from 'koa';
import { bearerToken } from '../../core/http/params.ts';
import { renderWritten } from './handlers.ts';
import type { RegistrationService } from './registration.ts';
import { clientBody, decodeBody, renderClient, toDraft } from './schemas.ts';

const idOf = (ctx: Context) => (ctx.params as { id: string }).id;

/** RFC 6750 §2.1 bearer token from the Authorization header (scheme case-insensitive). */
const bearer = (ctx: Context): string | undefined => bearerToken(ctx.get('authorization'));

export function registrationHandlers(registration: RegistrationService) {
  return {
    /** Runs before the body is decoded, so a disabled feature answers 404 whatever is sent. */
    async requireDynamicRegistration(_ctx: Context, next: Next) {
      registration.assertEnabled();
      await next();
    },

    async createOidcDynamicClient(ctx: Context) {
      const w = await registration.register(toDraft(decodeBody(clientBody, ctx.request.body)));
      ctx.status = 201;
      // ⚠ Hydra quirk, kept for compatibility: a relative Location without a leading slash.
      ctx.set('Location', `admin/clients/${encodeURIComponent(w.client.client_id)}`);
      ctx.body = renderWritten(w);
    },

    async getOidcDynamicClient(ctx: Context) {
      ctx.body = renderClient(await registration.get(idOf(ctx), bearer(ctx)), { hideMetadata: true });
    },

    async setOidcDynamicClient(ctx: Context) {
      const w = await registration.replace(idOf(ctx), bearer(ctx), ctx.request.body);
      ctx.body = renderClient(w.client, { registration_access_token: w.registrationToken });
    },

    async deleteOidcDynamicClient(ctx: Context) {
      await registration.remove(idOf(ctx), bearer(ctx));
      ctx.status = 204;
    },
  };
}
