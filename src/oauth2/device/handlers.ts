/**
 * Device authorization grant routes: `POST /oauth2/device/auth` (oAuth2DeviceFlow), `GET
 * /oauth2/device/verify` (performOAuth2DeviceVerificationFlow) and `PUT
 * /admin/oauth2/auth/requests/device/accept` (acceptUserCodeRequest).
 */
import type { Context } from 'koa';
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import { renderError } from '../../core/http/errors.ts';
import { firstValue, noStore } from '../../core/http/params.ts';
import { requestParams } from '../authorize/handlers.ts';
import { koaCookieJar } from '../cookie-jar.ts';
import type { OAuth2Config } from '../deps.ts';
import { parseOr400 } from '../guard.ts';
import type { ClientCertificates } from '../mtls.ts';
import { oauth2Form } from '../token/handlers.ts';
import type { DeviceService } from './service.ts';

/** Hydra's AcceptDeviceUserCodeRequest; a JSON null is Go's empty string, refused as a missing code. */
export const acceptDeviceUserCodeBody = z.looseObject({
  user_code: z
    .string()
    .nullish()
    .transform((v) => v ?? undefined),
});

export function deviceHandlers(service: DeviceService, config: OAuth2Config, certificates: ClientCertificates) {
  async function oAuth2DeviceFlow(ctx: Context) {
    noStore(ctx);
    try {
      ctx.body = await service.authorize(oauth2Form(ctx), ctx.get('authorization') || undefined, certificates.of(ctx));
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      renderError(ctx, e, { exposeDebug: config.oauth2.expose_internal_errors });
    }
    ctx.type = 'application/json;charset=UTF-8';
  }

  async function performOAuth2DeviceVerificationFlow(ctx: Context) {
    const outcome = await service.verify(requestParams(ctx), koaCookieJar(ctx, config), ctx.ip);
    noStore(ctx);
    if (outcome.kind !== 'redirect') throw new Error('device verification answers with redirects only');
    ctx.status = outcome.status;
    ctx.set('Location', outcome.location);
    ctx.body = '';
  }

  async function acceptUserCodeRequest(ctx: Context) {
    const body = parseOr400(acceptDeviceUserCodeBody, ctx.request.body ?? {});
    ctx.body = await service.acceptUserCode(firstValue(ctx.query.device_challenge), body.user_code);
  }

  return { oAuth2DeviceFlow, performOAuth2DeviceVerificationFlow, acceptUserCodeRequest };
}
