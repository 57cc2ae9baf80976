/** `POST /credentials` (createVerifiableCredential). */
import type { Context } from 'koa';
import { noStore } from '../../core/http/params.ts';
import type { ClientCertificates } from '../mtls.ts';
import { presentedToken } from '../sender-constraint.ts';
import type { CredentialsService } from './service.ts';

export function credentialHandlers(service: CredentialsService, certificates: ClientCertificates) {
  async function createVerifiableCredential(ctx: Context) {
    const r = await service.create(presentedToken(ctx, certificates, false), ctx.request.body);
    noStore(ctx);
    ctx.status = r.status;
    ctx.body = r.body;
  }
  return { createVerifiableCredential };
}
