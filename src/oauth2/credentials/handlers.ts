/** `POST /credentials` (createVerifiableCredential). */
import type { Context } from 'koa';
import { noStore } from '../../core/http/params.ts';
import { presentedToken } from '../sender-constraint.ts';
import type { CredentialsService } from './service.ts';

export function credentialHandlers(service: CredentialsService) {
  async function createVerifiableCredential(ctx: Context) {
    const r = await service.create(presentedToken(ctx, false), ctx.request.body);
    noStore(ctx);
    ctx.status = r.status;
    ctx.body = r.body;
  }
  return { createVerifiableCredential };
}
