/**
 * The console runs directories: create one, edit its settings (name, webhook, delivery log, Google
 * domain and chosen groups), deactivate and reactivate it, delete it, rotate its SCIM secret, clear
 * its delivery log, resend its events from a sequence number, and read its sync health. Destructive
 * actions ask first (a confirmation page, then a POST with `confirm=yes`); every action goes
 * through the directories' services, whose audit events name the signed-in operator.
 */
import type { Context } from 'koa';
import { AppError } from '../../core/errors.ts';
import type { Registrar } from '../../core/http/routes.ts';
import { DIRECTORY_TYPES, type DirectoryRecord } from '../../dsync/index.ts';
import { barChart } from '../chart.ts';
import { dirPath, loadDirectory, subNav, typeLabel } from '../directory-nav.ts';
import { badRequest, type ConsoleEnv } from '../env.ts';
import { confirmBody, csrfField, e, secretBox, when } from '../html.ts';

const field = (name: string, label: string, value = '', o: { hint?: string; type?: string; required?: boolean } = {}) =>
  `<label for="${e(name)}">${e(label)}${o.hint ? ` <span class="hint">${e(o.hint)}</span>` : ''}</label>
<input type="${o.type ?? 'text'}" id="${e(name)}" name="${e(name)}" value="${e(value)}"${o.required ? ' required' : ''} autocomplete="off">`;

const check = (name: string, label: string, on: boolean) =>
  `<label class="check"><input type="checkbox" name="${e(name)}" value="yes"${on ? ' checked' : ''}> ${e(label)}</label>`;

/** A service's refusal (400 with its message) shown on the form again; anything else propagates. */
async function refusal<T>(fn: () => Promise<T>): Promise<{ ok: T } | { error: string }> {
  try {
    return { ok: await fn() };
  } catch (err) {
    if (err instanceof AppError && err.status < 500) return { error: err.description || err.code };
    throw err;
  }
}

/**
 * Long: the forms, their confirmations and the health view share the directory loader, the
 * confirmation rule and the redirects, which the closure binds once; each route is a few lines.
 */
export function directoryAdminPages(env: ConsoleEnv, r: Registrar): void {
  const dsync = env.c.dsync.services;
  const confirmed = (ctx: Context) => env.field(ctx, 'confirm') === 'yes';
  const see = (ctx: Context, path: string) => {
    ctx.status = 303;
    ctx.redirect(path);
  };

  function createForm(ctx: Context, error?: string, status = 200) {
    const f = (n: string) => (error ? env.field(ctx, n) : '');
    const options = Object.entries(DIRECTORY_TYPES)
      .map(([v, l]) => `<option value="${e(v)}"${f('type') === v ? ' selected' : ''}>${e(l)}</option>`)
      .join('');
    const body = `${error ? `<p class="error" role="alert">${e(error)}</p>` : ''}
<form method="post" action="/console/directories/new">
${csrfField(env.csrf(ctx))}
${field('tenant', 'Tenant', f('tenant'), { required: true, hint: 'The customer, e.g. acme.com' })}
${field('product', 'Product', f('product'), { required: true, hint: 'Your application, e.g. crm' })}
<label for="type">Identity provider</label><select id="type" name="type" required>${options}</select>
${field('name', 'Name', f('name'), { hint: 'Optional: shown in lists' })}
${field('webhook_url', 'Webhook URL', f('webhook_url'), { type: 'url', hint: 'Optional: where events are posted' })}
${field('webhook_secret', 'Webhook signing secret', f('webhook_secret'), { hint: 'Required with a webhook URL' })}
${check('log_webhook_events', 'Log every delivery', f('log_webhook_events') === 'yes')}
${field('google_domain', 'Google Workspace domain', f('google_domain'), { hint: 'Google Workspace only' })}
<div class="actions"><button type="submit">Create the directory</button><a class="button secondary" href="/console/directories">Cancel</a></div>
</form>`;
    env.page(ctx, 'New directory', body, { status });
  }

  r.get('/directories/new', async function consoleDirectoryNew(ctx) {
    createForm(ctx);
  });

  r.post('/directories/new', async function consoleDirectoryCreate(ctx) {
    const webhook = env.field(ctx, 'webhook_url').trim();
    const r = await refusal(() =>
      dsync.directories.create({
        tenant: env.field(ctx, 'tenant').trim(),
        product: env.field(ctx, 'product').trim(),
        type: env.field(ctx, 'type'),
        ...(env.field(ctx, 'name').trim() ? { name: env.field(ctx, 'name').trim() } : {}),
        ...(webhook ? { webhook_url: webhook, webhook_secret: env.field(ctx, 'webhook_secret') } : {}),
        log_webhook_events: env.field(ctx, 'log_webhook_events') === 'yes',
        ...(env.field(ctx, 'google_domain').trim() ? { google_domain: env.field(ctx, 'google_domain').trim() } : {}),
      }),
    );
    if ('error' in r) return createForm(ctx, r.error, 400);
    see(ctx, `${dirPath(r.ok.id)}?done=directory-created`);
  });

  function editForm(ctx: Context, d: DirectoryRecord, error?: string, status = 200) {
    const google = d.type === 'google';
    const body = `${subNav(ctx, d)}
${error ? `<p class="error" role="alert">${e(error)}</p>` : ''}
<form method="post" action="${dirPath(d.id)}/edit">
${csrfField(env.csrf(ctx))}
${field('name', 'Name', d.name)}
${field('webhook_url', 'Webhook URL', d.webhook.endpoint, { type: 'url', hint: 'Empty: events are stored, not delivered' })}
${field('webhook_secret', 'New webhook signing secret', '', { hint: 'Empty: keep the current one' })}
${check('log_webhook_events', 'Log every delivery', d.log_webhook_events)}
${
  google
    ? `${field('google_domain', 'Google Workspace domain', d.google_domain ?? '')}
<label for="google_groups">Groups to sync <span class="hint">One group email or id per line; empty: every group and user</span></label>
<textarea id="google_groups" name="google_groups">${e((d.google_groups ?? []).join('\n'))}</textarea>`
    : ''
}
<div class="actions"><button type="submit">Save</button><a class="button secondary" href="${dirPath(d.id)}">Cancel</a></div>
</form>`;
    env.page(ctx, `Edit ${d.name || d.id}`, body, { status });
  }

  r.get('/directories/:id/edit', async function consoleDirectoryEdit(ctx) {
    editForm(ctx, await loadDirectory(dsync, ctx));
  });

  r.post('/directories/:id/edit', async function consoleDirectorySave(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const url = env.field(ctx, 'webhook_url').trim();
    const secret = env.field(ctx, 'webhook_secret');
    const r = await refusal(() =>
      dsync.directories.update(d.id, {
        name: env.field(ctx, 'name').trim(),
        log_webhook_events: env.field(ctx, 'log_webhook_events') === 'yes',
        webhook_url: url,
        webhook_secret: url ? secret || d.webhook.secret : '',
        ...(d.type === 'google'
          ? {
              google_domain: env.field(ctx, 'google_domain').trim(),
              google_groups: env
                .field(ctx, 'google_groups')
                .split('\n')
                .map((g) => g.trim())
                .filter(Boolean),
            }
          : {}),
      }),
    );
    if ('error' in r) return editForm(ctx, d, r.error, 400);
    see(ctx, `${dirPath(d.id)}?done=directory-updated`);
  });

  /** Deactivating refuses the identity provider's requests: asked first. Reactivating is not. */
  r.post('/directories/:id/status', async function consoleDirectoryStatus(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const deactivate = env.field(ctx, 'to') === 'deactivated';
    if (deactivate && !confirmed(ctx))
      return env.page(
        ctx,
        `Deactivate ${d.name || d.id}?`,
        confirmBody({
          action: `${dirPath(d.id)}/status`,
          question: `Deactivate the directory ${d.name || d.id}?`,
          consequence:
            'Its identity provider’s requests are answered without effect until it is reactivated; its users and groups stay.',
          button: 'Deactivate',
          back: dirPath(d.id),
          csrf: env.csrf(ctx),
          fields: { to: 'deactivated' },
        }),
      );
    await dsync.directories.update(d.id, { deactivated: deactivate });
    see(ctx, `${dirPath(d.id)}?done=${deactivate ? 'directory-deactivated' : 'directory-activated'}`);
  });

  r.post('/directories/:id/delete', async function consoleDirectoryDelete(ctx) {
    const d = await loadDirectory(dsync, ctx);
    if (!confirmed(ctx))
      return env.page(
        ctx,
        `Delete ${d.name || d.id}?`,
        confirmBody({
          action: `${dirPath(d.id)}/delete`,
          question: `Delete the directory ${d.name || d.id} (${d.tenant}, ${d.product})?`,
          consequence:
            'Its users, groups, memberships, events, queued deliveries and delivery log are deleted, and its SCIM endpoint stops answering. This cannot be undone.',
          button: 'Delete the directory',
          back: dirPath(d.id),
          csrf: env.csrf(ctx),
        }),
      );
    await dsync.directories.remove(d.id);
    see(ctx, '/console/directories?done=directory-deleted');
  });

  r.post('/directories/:id/rotate-secret', async function consoleDirectoryRotate(ctx) {
    const d = await loadDirectory(dsync, ctx);
    if (!d.scim.endpoint) throw badRequest('This directory has no SCIM secret.');
    if (!confirmed(ctx))
      return env.page(
        ctx,
        'Rotate the SCIM secret?',
        confirmBody({
          action: `${dirPath(d.id)}/rotate-secret`,
          question: `Give ${d.name || d.id} a new SCIM secret?`,
          consequence:
            'The current secret stops working at once: the identity provider’s requests fail until the new secret is entered there.',
          button: 'Rotate the secret',
          back: dirPath(d.id),
          csrf: env.csrf(ctx),
        }),
      );
    const rotated = await dsync.directories.rotateScimSecret(d.id);
    env.page(
      ctx,
      `New SCIM secret of ${d.name || d.id}`,
      `${subNav(ctx, d)}
<p>Enter it in the identity provider's provisioning settings now.</p>
${secretBox('scim-secret', 'SCIM secret', rotated.scim.secret, true)}
<p><a href="${dirPath(d.id)}">Back to the directory</a></p>`,
      { notice: 'The SCIM secret was rotated: the old one no longer works.' },
    );
  });

  r.post('/directories/:id/webhook-logs/clear', async function consoleDirectoryClearLogs(ctx) {
    const d = await loadDirectory(dsync, ctx);
    if (!confirmed(ctx))
      return env.page(
        ctx,
        'Clear the delivery log?',
        confirmBody({
          action: `${dirPath(d.id)}/webhook-logs/clear`,
          question: `Clear the delivery log of ${d.name || d.id}?`,
          consequence: 'Every recorded delivery of this directory is deleted; events and queued deliveries stay.',
          button: 'Clear the log',
          back: `${dirPath(d.id)}/webhook-logs`,
          csrf: env.csrf(ctx),
        }),
      );
    await dsync.webhookLogs.deleteAll(d.id);
    see(ctx, `${dirPath(d.id)}/webhook-logs?done=logs-cleared`);
  });

  r.post('/directories/:id/events/resend', async function consoleDirectoryResend(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const from = Number.parseInt(env.field(ctx, 'from'), 10);
    if (!Number.isInteger(from) || from < 1) throw badRequest('Give the sequence number to resend from (1 or more).');
    if (!d.webhook.endpoint) throw badRequest('This directory has no webhook: there is nowhere to resend to.');
    if (!confirmed(ctx))
      return env.page(
        ctx,
        'Resend events?',
        confirmBody({
          action: `${dirPath(d.id)}/events/resend`,
          question: `Resend every kept event of ${d.name || d.id} from sequence number ${from} on?`,
          consequence:
            'They are posted to the webhook again, in order (a receiver that de-duplicates by event id ignores those it has).',
          button: 'Resend',
          back: `${dirPath(d.id)}/health`,
          csrf: env.csrf(ctx),
          fields: { from: String(from) },
        }),
      );
    const n = await dsync.delivery.resend(d.id, from, dsync.policy);
    env.c.log.info({ operator: env.session(ctx).sub, directoryId: d.id, from, events: n }, 'console: events resent');
    see(ctx, `${dirPath(d.id)}/health?done=${n ? 'events-resent' : 'events-none'}`);
  });

  r.get('/directories/:id/health', async function consoleDirectoryHealth(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const h = await dsync.health.health(d.id);
    const chart = barChart({
      id: 'chart-events',
      title: 'Events per hour',
      series: [{ label: 'events', colour: '#0b4f9c', values: h.eventsPerHour }],
      span: { slots: 24, from: '24 h ago', per: 'Per hour over the last 24 hours', span: 'last 24 hours' },
    });
    const body = `${subNav(ctx, d)}
<div class="cards">${chart}</div>
<dl>
<dt>Events in the last 24 hours</dt><dd>${h.eventsPerHour.reduce((a, b) => a + b, 0)}</dd>
<dt>Waiting for delivery</dt><dd>${h.undelivered}${h.oldestUndelivered ? `, the oldest queued ${when(h.oldestUndelivered)}` : ''}</dd>
<dt>Delivery time, last hour</dt><dd>${h.latencyMs ? `median ${h.latencyMs.p50} ms, 95th percentile ${h.latencyMs.p95} ms (${h.latencyMs.delivered} events)` : 'no event delivered'}</dd>
<dt>Failed delivery jobs</dt><dd>${h.failedJobs ? `<strong>${h.failedJobs}</strong> (<a href="/console/webhooks">Webhooks</a>)` : 'none'}</dd>
<dt>Failed deliveries, last 24 hours</dt><dd>${d.log_webhook_events ? String(h.failedDeliveriesLastDay) : 'not logged (log_webhook_events is off)'}</dd>
</dl>
<h2>Resend events</h2>
<form method="post" action="${dirPath(d.id)}/events/resend">
${csrfField(env.csrf(ctx))}
${field('from', 'From sequence number', '', { type: 'number', required: true, hint: 'Every kept event from this one on is posted again (see Events for the numbers)' })}
<div class="actions"><button type="submit" class="secondary">Resend…</button></div>
</form>`;
    env.page(ctx, `Health of ${d.name || d.id} (${typeLabel(d.type)})`, body, {
      notice: HEALTH_NOTICES[typeof ctx.query.done === 'string' ? ctx.query.done : ''],
    });
  });
}

const HEALTH_NOTICES: Record<string, string> = {
  'events-resent': 'The events were queued for delivery again.',
  'events-none': 'No kept event from that sequence number on: nothing was queued.',
};
