/** Admin API: `/admin/oauth2/auth/sessions/{consent,login}` (Hydra operation ids). */
import type { Context } from 'koa';
import { firstValue } from '../../core/http/params.ts';
import { linkHeader } from '../../core/pagination.ts';
import type { SessionsService } from './service.ts';

export function sessionHandlers(sessions: SessionsService) {
  return {
    async listOAuth2ConsentSessions(ctx: Context) {
      const q = ctx.query as Record<string, string | string[] | undefined>;
      const page = await sessions.listConsentSessions(firstValue(q.subject), firstValue(q.login_session_id), q);
      const link = { path: ctx.path, query: q, size: page.size, first: page.firstToken, next: page.nextToken };
      ctx.set('Link', linkHeader(link));
      ctx.body = page.items;
    },

    async revokeOAuth2ConsentSessions(ctx: Context) {
      await sessions.revokeConsentSessions({
        subject: firstValue(ctx.query.subject),
        client: firstValue(ctx.query.client),
        consentRequestId: firstValue(ctx.query.consent_request_id),
        all: firstValue(ctx.query.all) === 'true',
      });
      ctx.status = 204;
    },

    async revokeOAuth2LoginSessions(ctx: Context) {
      // A client that disconnects stops the batched deletion between two batches.
      const gone = new AbortController();
      ctx.res.once('close', () => {
        if (ctx.res.writableFinished) return;
        ctx.state.log?.info('the client disconnected: login session revocation stops after the current batch');
        gone.abort();
      });
      await sessions.revokeLoginSessions(firstValue(ctx.query.subject), firstValue(ctx.query.sid), gone.signal);
      ctx.status = 204;
    },
  };
}
