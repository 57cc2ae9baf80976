/** `POST /credentials` (createVerifiableCredential). */
import type { Context } from 'koa';
import type { CredentialsService } from './service.ts';

export function credentialHandlers(service: CredentialsService) {
  async function createVerifiableCredential(ctx: Context) {
    const m = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'));
    const r = await service.create(m ? (m[1] as string).trim() : undefined, ctx.request.body);
    ctx.set('Cache-Control', 'no-store');
    ctx.status = r.status;
    ctx.body = r.body;
  }
  return { createVerifiableCredential };
}
