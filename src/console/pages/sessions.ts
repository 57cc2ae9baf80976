/** The console's sessions page: a subject's consent sessions; revoke its login or consent sessions. */
import type { Registrar } from '../../core/http/routes.ts';
import { badRequest, type ConsoleEnv } from '../env.ts';
import { confirmBody, e, postButton, table, when } from '../html.ts';

const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
const enc = encodeURIComponent;

export function sessionPages(env: ConsoleEnv, r: Registrar): void {
  const oauth2 = env.c.oauth2;

  r.get('/sessions', async function consoleSessions(ctx) {
    const subject = typeof ctx.query.subject === 'string' ? ctx.query.subject.trim() : '';
    let results = '';
    if (subject) {
      const page = await oauth2.flows.sessions.listConsentSessions(subject, undefined, { page_size: '200' });
      const rows = page.items.map((s) => {
        const v = s as {
          consent_request?: { client?: { client_name?: unknown; client_id?: unknown } };
          grant_scope?: unknown;
          handled_at?: Date | string | null;
          remember?: unknown;
        };
        const client = v.consent_request?.client ?? {};
        return [
          `${e(String(client.client_name || ''))} <code>${e(String(client.client_id ?? ''))}</code>`,
          e(list(v.grant_scope).join(' ')),
          when(v.handled_at),
          v.remember ? 'yes' : 'no',
        ];
      });
      results = `${table(`Consent sessions of ${subject}`, ['Client', 'Granted scope', 'Granted', 'Remembered'], rows, 'No consent sessions.')}
<div class="actions">
${postButton('/console/sessions/revoke', 'Revoke all consent sessions…', env.csrf(ctx), { cls: 'danger', fields: { subject, kind: 'consent' } })}
${postButton('/console/sessions/revoke', 'Revoke all login sessions…', env.csrf(ctx), { cls: 'danger', fields: { subject, kind: 'login' } })}
</div>`;
    }
    env.page(
      ctx,
      'Sessions',
      `<form method="get" action="/console/sessions" role="search">
<label for="subject">Subject</label>
<input type="search" id="subject" name="subject" required value="${e(subject)}">
<button type="submit" class="secondary">Show sessions</button>
</form>
${results}`,
    );
  });

  r.post('/sessions/revoke', async function consoleSessionsRevoke(ctx) {
    const subject = env.field(ctx, 'subject').trim();
    const kind = env.field(ctx, 'kind') === 'login' ? 'login' : 'consent';
    if (!subject) throw badRequest('Name the subject.');
    if (env.field(ctx, 'confirm') !== 'yes') {
      return env.page(
        ctx,
        `Revoke ${kind} sessions`,
        confirmBody({
          action: '/console/sessions/revoke',
          question: `Revoke every ${kind} session of ${subject}?`,
          consequence:
            kind === 'login'
              ? 'The subject must sign in again everywhere; clients with back-channel logout are notified.'
              : 'Every consent and every token issued under it is deleted; clients must ask for consent again.',
          button: `Revoke ${kind} sessions`,
          back: `/console/sessions?subject=${enc(subject)}`,
          csrf: env.csrf(ctx),
          fields: { subject, kind },
        }),
      );
    }
    if (kind === 'login') await oauth2.flows.sessions.revokeLoginSessions(subject, undefined);
    else await oauth2.flows.sessions.revokeConsentSessions({ subject, all: true });
    ctx.status = 303;
    ctx.redirect(`/console/sessions?subject=${enc(subject)}&done=sessions-revoked`);
  });
}
