/** The console's trust page: the trusted issuers of the JWT bearer grant (RFC 7523); add, delete. */
import type { Registrar } from '../../core/http/routes.ts';
import { decodeTrustBody } from '../../oauth2/index.ts';
import { badRequest, type ConsoleEnv } from '../env.ts';
import { confirmBody, e, postButton, table, when } from '../html.ts';

const enc = encodeURIComponent;

export function trustPages(env: ConsoleEnv, r: Registrar): void {
  const oauth2 = env.c.oauth2;

  r.get('/trust', async function consoleTrust(ctx) {
    const page = await oauth2.trust.list({ page_size: '500' });
    const rows = page.items.map((t) => [
      `<code>${e(t.issuer)}</code>`,
      t.allowAnySubject ? '<em>any subject</em>' : e(t.subject),
      e(t.scope.join(' ')),
      `<code>${e(t.keyId)}</code>`,
      when(t.expiresAt),
      postButton(`/console/trust/${enc(t.id)}/delete`, 'Delete…', env.csrf(ctx), { cls: 'secondary' }),
    ]);
    const body = `${table('Trusted JWT bearer grant issuers', ['Issuer', 'Subject', 'Scope', 'Key id', 'Expires', 'Actions'], rows, 'No trust relationships.')}
<h2>Trust an issuer</h2>
<form method="post" action="/console/trust">
<input type="hidden" name="csrf" value="${e(env.csrf(ctx))}">
<label for="issuer">Issuer</label>
<input type="url" id="issuer" name="issuer" required>
<label for="trust-subject">Subject <span class="hint" id="trust-subject-hint">Leave empty and tick the box below to allow any subject.</span></label>
<input type="text" id="trust-subject" name="subject" aria-describedby="trust-subject-hint">
<label class="check" for="allow_any_subject"><input type="checkbox" id="allow_any_subject" name="allow_any_subject" value="1"> Allow any subject</label>
<label for="trust-scope">Scope <span class="hint" id="trust-scope-hint">Space-separated.</span></label>
<input type="text" id="trust-scope" name="scope" aria-describedby="trust-scope-hint">
<label for="jwk">Public key (JWK, JSON)</label>
<textarea id="jwk" name="jwk" required></textarea>
<label for="expires_at">Expires at <span class="hint" id="expires-hint">RFC 3339, e.g. 2030-01-01T00:00:00Z.</span></label>
<input type="text" id="expires_at" name="expires_at" required aria-describedby="expires-hint">
<div class="actions"><button type="submit">Add trust relationship</button></div>
</form>`;
    env.page(ctx, 'Trust relationships', body);
  });

  r.post('/trust', async function consoleTrustAdd(ctx) {
    let jwk: unknown;
    try {
      jwk = JSON.parse(env.field(ctx, 'jwk'));
    } catch {
      throw badRequest('The public key is not valid JSON.');
    }
    await oauth2.trust.create(
      decodeTrustBody({
        issuer: env.field(ctx, 'issuer').trim(),
        subject: env.field(ctx, 'subject').trim(),
        allow_any_subject: env.field(ctx, 'allow_any_subject') === '1',
        scope: env.field(ctx, 'scope').split(/\s+/).filter(Boolean),
        jwk,
        expires_at: env.field(ctx, 'expires_at').trim(),
      }),
    );
    ctx.status = 303;
    ctx.redirect('/console/trust?done=trust-added');
  });

  r.post('/trust/:id/delete', async function consoleTrustDelete(ctx) {
    const id = env.param(ctx, 'id');
    const t = await oauth2.trust.get(id);
    if (env.field(ctx, 'confirm') !== 'yes') {
      return env.page(
        ctx,
        'Delete trust relationship',
        confirmBody({
          action: `/console/trust/${enc(id)}/delete`,
          question: `Stop trusting ${t.issuer} for ${t.allowAnySubject ? 'any subject' : t.subject}?`,
          consequence: 'Its assertions are refused from now on.',
          button: 'Delete trust relationship',
          back: '/console/trust',
          csrf: env.csrf(ctx),
        }),
      );
    }
    await oauth2.trust.remove(id);
    ctx.status = 303;
    ctx.redirect('/console/trust?done=trust-deleted');
  });
}
