/**
 * The console's setup links page: the links of every tenant, create one, show a link's URL (a
 * bearer credential: never on a page until asked for with a POST, logged without the value), delete.
 * Registered before the directory of `:id`, whose path would match it.
 */
import type { Context } from 'koa';
import { AppError } from '../../core/errors.ts';
import type { Registrar } from '../../core/http/routes.ts';
import type { SetupLink } from '../../dsync/index.ts';
import { done, PAGE, pageOf, pager } from '../directory-nav.ts';
import type { ConsoleEnv } from '../env.ts';
import { confirmBody, csrfField, e, postButton, secretBox, table, when } from '../html.ts';

/** The page: the links, one link's URL when it was just created or asked for, and the form of a new one. */
async function setupLinksPage(
  env: ConsoleEnv,
  ctx: Context,
  o: { reveal?: SetupLink; created?: SetupLink; error?: string; form?: Record<string, string> } = {},
) {
  const csrf = env.session(ctx).csrf;
  const page = pageOf(ctx);
  const { data } = await env.c.dsync.services.setupLinks.byProduct(
    undefined,
    { pageOffset: (page - 1) * PAGE, pageLimit: PAGE },
    { all: true },
  );
  const now = env.c.clock.now().getTime();
  const rows = data.map((l) => [
    e(l.tenant),
    e(l.product),
    e(l.name),
    `${when(new Date(l.validTill))}${l.validTill < now ? ' <strong>(expired)</strong>' : ''}`,
    `<code>${e(l.webhook_url)}</code>`,
    `<div class="actions">${postButton(
      `/console/directories/setup-links/${encodeURIComponent(l.setupID)}/reveal`,
      `Show the link of ${l.tenant}/${l.product}`,
      csrf,
      { cls: 'secondary' },
    )}${postButton(
      `/console/directories/setup-links/${encodeURIComponent(l.setupID)}/delete`,
      `Delete the link of ${l.tenant}/${l.product}`,
      csrf,
      { cls: 'danger' },
    )}</div>`,
  ]);
  const shown = o.created ?? o.reveal;
  const f = o.form ?? {};
  const v = (k: string) => e(f[k] ?? '');
  const body = `<p>A setup link lets a tenant's IT administrator create and configure the directories of one tenant and product
without an API key. The link's URL is a bearer credential: hand it over privately. Deleting a link (or creating it again with
“replace”) makes its URL stop working.</p>
${o.error ? `<p class="error" role="alert">${e(o.error)}</p>` : ''}
${
  shown
    ? `<section aria-labelledby="link-shown"><h2 id="link-shown">Link of ${e(shown.tenant)}/${e(shown.product)}</h2>
${secretBox('setup-link-url', 'Setup link URL', shown.url, true)}</section>`
    : ''
}
<h2>Links</h2>
${table('Setup links', ['Tenant', 'Product', 'Name', 'Valid until', 'Webhook', 'Actions'], rows, 'No setup links.')}
${pager('/console/directories/setup-links', page, data.length, 'Setup links')}
<h2 id="new-link">New setup link</h2>
<form method="post" action="/console/directories/setup-links">
${csrfField(csrf)}
<label for="sl-tenant">Tenant</label><input type="text" id="sl-tenant" name="tenant" required value="${v('tenant')}">
<label for="sl-product">Product</label><input type="text" id="sl-product" name="product" required value="${v('product')}">
<label for="sl-name">Name <span class="hint">Optional, shown to the administrator.</span></label>
<input type="text" id="sl-name" name="name" value="${v('name')}">
<label for="sl-webhook">Webhook URL <span class="hint">Where the tenant's directories send their events.</span></label>
<input type="url" id="sl-webhook" name="webhook_url" required value="${v('webhook_url')}">
<label for="sl-secret">Webhook secret <span class="hint">Signs every delivery (the application verifies it).</span></label>
<input type="text" id="sl-secret" name="webhook_secret" required autocomplete="off" value="">
<label for="sl-days">Valid for (days)</label>
<input type="number" id="sl-days" name="expiry_days" min="1" max="3650" value="${v('expiry_days') || '3'}">
<label class="check"><input type="checkbox" name="regenerate" value="yes"> Replace the tenant's current link (its URL stops working)</label>
<button type="submit">Create setup link</button>
</form>`;
  env.page(ctx, 'Setup links', body, { status: o.error ? 400 : 200, notice: done(ctx) });
}

export function setupLinkPages(env: ConsoleEnv, r: Registrar): void {
  const dsync = env.c.dsync.services;

  r.get('/directories/setup-links', async function consoleSetupLinks(ctx) {
    await setupLinksPage(env, ctx);
  });

  r.post('/directories/setup-links', async function consoleSetupLinkCreate(ctx) {
    const form = Object.fromEntries(
      ['tenant', 'product', 'name', 'webhook_url', 'expiry_days'].map((k) => [k, env.field(ctx, k).trim()]),
    );
    const days = Number.parseInt(form.expiry_days ?? '', 10);
    try {
      const link = await dsync.setupLinks.create({
        tenant: form.tenant,
        product: form.product,
        name: form.name,
        webhook_url: form.webhook_url,
        webhook_secret: env.field(ctx, 'webhook_secret'),
        ...(Number.isInteger(days) && days > 0 ? { expiryDays: days } : {}),
        regenerate: env.field(ctx, 'regenerate') === 'yes',
      });
      env.c.log.info({ operator: env.session(ctx).sub, setupLink: link.setupID }, 'console: setup link created');
      await setupLinksPage(env, ctx, { created: link });
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      await setupLinksPage(env, ctx, { error: err.description || err.code, form });
    }
  });

  r.post('/directories/setup-links/:sid/reveal', async function consoleSetupLinkReveal(ctx) {
    const link = await dsync.setupLinks.get(ctx.params.sid);
    env.c.log.info({ operator: env.session(ctx).sub, setupLink: link.setupID }, 'console: setup link shown');
    await setupLinksPage(env, ctx, { reveal: link });
  });

  r.post('/directories/setup-links/:sid/delete', async function consoleSetupLinkDelete(ctx) {
    const link = await dsync.setupLinks.get(ctx.params.sid);
    if (env.field(ctx, 'confirm') !== 'yes') {
      return env.page(
        ctx,
        'Delete setup link',
        confirmBody({
          action: `/console/directories/setup-links/${encodeURIComponent(link.setupID)}/delete`,
          question: `Delete the setup link of ${link.tenant}/${link.product}?`,
          consequence:
            'Its URL stops working at once. Directories already created with it stay as they are. You can create a new link later.',
          button: 'Delete setup link',
          back: '/console/directories/setup-links',
          csrf: env.session(ctx).csrf,
        }),
      );
    }
    await dsync.setupLinks.remove({ id: link.setupID });
    env.c.log.info({ operator: env.session(ctx).sub, setupLink: link.setupID }, 'console: setup link deleted');
    ctx.status = 303;
    ctx.redirect('/console/directories/setup-links?done=link-deleted');
  });
}
