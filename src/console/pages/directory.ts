/**
 * The console's page of one directory: its settings, its SCIM connection and its webhook. The SCIM
 * bearer secret and the webhook secret are shown only when the operator asks with a POST
 * (CSRF-checked, logged without the value).
 */
import type { Context } from 'koa';
import type { Registrar } from '../../core/http/routes.ts';
import type { DirectoryRecord } from '../../dsync/index.ts';
import { dirPath, done, loadDirectory, subNav, typeLabel } from '../directory-nav.ts';
import type { ConsoleEnv } from '../env.ts';
import { csrfField, e, postButton, secretBox } from '../html.ts';

export function directoryPages(env: ConsoleEnv, r: Registrar): void {
  const dsync = env.c.dsync.services;

  function directoryPage(ctx: Context, d: DirectoryRecord, reveal?: 'scim' | 'webhook') {
    const csrf = env.session(ctx).csrf;
    const revealForm = (which: 'scim' | 'webhook', label: string) =>
      `<form method="post" action="${dirPath(d.id)}/reveal">${csrfField(csrf)}<input type="hidden" name="which" value="${which}"><button type="submit" class="secondary">${e(label)}</button></form>`;
    const scim = d.scim.endpoint
      ? `<h2>SCIM connection</h2>
<p>Enter these in the identity provider's provisioning settings (${e(typeLabel(d.type))}).</p>
<dl>
<dt>SCIM endpoint (base URL)</dt>
<dd><code id="scim-endpoint">${e(d.scim.endpoint)}</code>
<button type="button" class="secondary" data-copy="scim-endpoint" hidden>Copy SCIM endpoint</button></dd>
<dt>Authentication</dt><dd>HTTP header <code>Authorization: Bearer &lt;secret&gt;</code></dd>
<dt>Bearer secret</dt>
<dd>${
          reveal === 'scim'
            ? secretBox('scim-secret', 'SCIM secret', d.scim.secret, true)
            : `<span class="muted">Hidden.</span> ${revealForm('scim', 'Reveal SCIM secret')}`
        }</dd>
</dl>`
      : `<h2>Cloud directory</h2><p>This directory is synced by gatehouse from Google Workspace${
          d.google_domain ? ` (<code>${e(d.google_domain)}</code>)` : ''
        }; it takes no SCIM requests.</p>`;
    const webhook = d.webhook.endpoint
      ? `<dl>
<dt>Endpoint</dt><dd><code>${e(d.webhook.endpoint)}</code></dd>
<dt>Signing secret</dt>
<dd>${
          reveal === 'webhook'
            ? secretBox('webhook-secret', 'Webhook secret', d.webhook.secret, true)
            : d.webhook.secret
              ? `<span class="muted">Hidden.</span> ${revealForm('webhook', 'Reveal webhook secret')}`
              : '<strong>none: events are not delivered</strong>'
        }</dd>
<dt>Delivery log</dt><dd>${d.log_webhook_events ? 'every attempt is recorded' : 'off (log_webhook_events is false)'}</dd>
</dl>
<div class="actions">${postButton(`${dirPath(d.id)}/webhooks/retry`, 'Re-enqueue failed deliveries of this directory', csrf)}</div>`
      : '<p>No webhook: events are stored (see Events) but not delivered.</p>';
    const actions = `<div class="actions">
<a class="button secondary" href="${dirPath(d.id)}/edit">Edit settings</a>
${postButton(`${dirPath(d.id)}/status`, d.deactivated ? 'Reactivate' : 'Deactivate…', csrf, {
  cls: 'secondary',
  fields: { to: d.deactivated ? 'active' : 'deactivated' },
})}
${d.scim.endpoint ? postButton(`${dirPath(d.id)}/rotate-secret`, 'Rotate SCIM secret…', csrf, { cls: 'secondary' }) : ''}
${postButton(`${dirPath(d.id)}/delete`, 'Delete…', csrf, { cls: 'danger' })}
</div>`;
    const body = `${subNav(ctx, d)}
${actions}
<dl>
<dt>ID</dt><dd><code>${e(d.id)}</code></dd>
<dt>Tenant</dt><dd>${e(d.tenant)}</dd>
<dt>Product</dt><dd>${e(d.product)}</dd>
<dt>Type</dt><dd>${e(typeLabel(d.type))}</dd>
<dt>Status</dt><dd>${d.deactivated ? '<strong>deactivated</strong> (SCIM requests are refused)' : 'active'}</dd>
</dl>
${scim}
<h2>Webhook</h2>
${webhook}`;
    env.page(ctx, `Directory ${d.name || d.id}`, body, { notice: done(ctx) });
  }

  r.get('/directories/:id', async function consoleDirectory(ctx) {
    directoryPage(ctx, await loadDirectory(dsync, ctx));
  });

  r.post('/directories/:id/reveal', async function consoleDirectoryReveal(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const which = env.field(ctx, 'which') === 'webhook' ? 'webhook' : 'scim';
    env.c.log.info(
      { operator: env.session(ctx).sub, directoryId: d.id, secret: which },
      'console: directory secret shown',
    );
    directoryPage(ctx, d, which);
  });
}
