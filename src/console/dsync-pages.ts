/**
 * The console's directory-sync pages: directories (SCIM endpoint, secrets behind a reveal), their
 * users, groups and members, setup links, and webhooks (events, delivery logs, failed deliveries
 * re-enqueued by a click). They call the dsync services in process; failed delivery jobs are read
 * and retried through the core's job admin functions (`gatehouse jobs failed|retry`).
 *
 * Secrets (SCIM bearer secret, webhook secret, setup link URL) are never part of a page until the
 * operator asks for them with a POST (CSRF-checked, logged without the value); the answer shows the
 * value in a `<details>` open by default, with a copy button (the only script of the console).
 */

import type { Context } from 'koa';
import { AppError } from '../core/errors.ts';
import type { Registrar } from '../core/http/routes.ts';
import { listFailedJobs, retryFailedJobs } from '../core/jobs/admin.ts';
import { LIFECYCLE_TASK } from '../dsync/events/lifecycle.ts';
import { DELIVER_TASK } from '../dsync/events/service.ts';
import type { SetupLink } from '../dsync/setup-links.ts';
import { DIRECTORY_TYPES, type DirectoryRecord, isUuid, type WebhookEvent } from '../dsync/types.ts';
import { barChart } from './charts.ts';
import { confirmBody, csrfField, e, postButton, secretBox, table, when } from './html.ts';
import type { ConsoleEnv } from './index.ts';
import { firstLine } from './job-pages.ts';

const PAGE = 50;

/** Results of this module's actions, shown after the redirect (a fixed list: a link cannot put words on a page). */
const RESULTS: Record<string, string> = {
  'webhook-retried': 'The failed delivery was re-enqueued; it runs now with a fresh attempt budget.',
  'webhooks-retried': 'The failed deliveries were re-enqueued; they run now with a fresh attempt budget.',
  'webhooks-none': 'No failed delivery matched (it may have been re-enqueued already).',
  'link-deleted': 'The setup link was deleted; its URL no longer works.',
};

const done = (ctx: Context) => (typeof ctx.query.done === 'string' ? RESULTS[ctx.query.done] : undefined);

/** 1-based page number of `?page=`. */
const pageOf = (ctx: Context) => {
  const n = typeof ctx.query.page === 'string' ? Number.parseInt(ctx.query.page, 10) : 1;
  return Number.isInteger(n) && n > 0 && n < 100_000 ? n : 1;
};

/** Previous/next links of a paged list (`count`: rows on this page). */
function pager(base: string, page: number, count: number, label: string): string {
  const sep = base.includes('?') ? '&' : '?';
  const prev = page > 1 ? `<a href="${e(`${base}${sep}page=${page - 1}`)}">Previous page</a>` : '';
  const next = count >= PAGE ? `<a href="${e(`${base}${sep}page=${page + 1}`)}">Next page</a>` : '';
  return prev || next ? `<nav aria-label="${e(label)} pages" class="actions">${prev} ${next}</nav>` : '';
}

const typeLabel = (t: string) => (DIRECTORY_TYPES as Record<string, string>)[t] ?? t;
const dirPath = (id: string) => `/console/directories/${encodeURIComponent(id)}`;
const yesNo = (b: boolean) => (b ? 'yes' : 'no');

/** A directory's sub-pages (shown on each of them; the current one marked). */
function subNav(ctx: Context, d: DirectoryRecord): string {
  const path = ctx.path.replace(/^\/admin(?=\/console)/, '');
  const base = dirPath(d.id);
  const items: Array<[string, string]> = [
    [base, 'Settings and SCIM'],
    [`${base}/users`, 'Users'],
    [`${base}/groups`, 'Groups'],
    [`${base}/events`, 'Events'],
    [`${base}/webhook-logs`, 'Delivery log'],
  ];
  const current = (href: string) => (href === base ? path === base : path === href || path.startsWith(`${href}/`));
  return `<nav aria-label="Directory ${e(d.name || d.id)}"><ul class="actions">${items
    .map(([href, label]) => `<li><a href="${href}"${current(href) ? ' aria-current="page"' : ''}>${e(label)}</a></li>`)
    .join('')}</ul></nav>`;
}

/** A short description of an event's subject (user e-mail, group name). */
function eventSubject(ev: { event: string; data?: unknown }): string {
  const d = (ev.data ?? {}) as Record<string, unknown>;
  const g = d.group as Record<string, unknown> | undefined;
  const user = typeof d.email === 'string' ? d.email : [d.first_name, d.last_name].filter(Boolean).join(' ');
  if (ev.event.startsWith('group.user_')) return `${user} · group ${typeof g?.name === 'string' ? g.name : ''}`;
  if (ev.event.startsWith('group.')) return typeof d.name === 'string' ? d.name : '';
  return user;
}

/** The event type(s) of a logged webhook body: one event, or a batch array. */
function logEvents(payload: unknown): string {
  let v = payload;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return '';
    }
  }
  if (Array.isArray(v)) return `batch of ${v.length}`;
  const ev = (v as { event?: unknown } | null)?.event;
  return typeof ev === 'string' ? ev : '';
}

const pretty = (payload: unknown) => {
  if (typeof payload !== 'string') return JSON.stringify(payload, null, 2);
  try {
    return JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    return payload;
  }
};

const MINUTE = 60_000;
/** Pages of the delivery log the chart reads at most (so at most 500 attempts of the last hour). */
const CHART_PAGES = 10;

/** Per-minute delivered/failed attempts of the last hour (60 slots, oldest first) from a newest-first reader. */
export async function attemptsPerMinute(
  now: number,
  read: (page: number) => Promise<Array<{ created_at: string; delivered: boolean }>>,
): Promise<{ delivered: number[]; failed: number[]; complete: boolean }> {
  const end = Math.floor(now / MINUTE) * MINUTE + MINUTE;
  const start = end - 60 * MINUTE;
  const delivered = Array.from({ length: 60 }, () => 0);
  const failed = Array.from({ length: 60 }, () => 0);
  for (let p = 0; p < CHART_PAGES; p++) {
    const rows = await read(p);
    for (const l of rows) {
      const at = Date.parse(l.created_at);
      if (at < start) return { delivered, failed, complete: true };
      const slot = Math.min(59, Math.floor((at - start) / MINUTE));
      const series = l.delivered ? delivered : failed;
      series[slot] = (series[slot] ?? 0) + 1;
    }
    if (rows.length < PAGE) return { delivered, failed, complete: true };
  }
  return { delivered, failed, complete: false };
}

export function dsyncPages(env: ConsoleEnv, r: Registrar): void {
  const c = env.c;
  const s = () => c.dsync.services;

  /** The directory of `:id` (a 404 page for anything else). */
  async function directory(ctx: Context): Promise<DirectoryRecord> {
    const id = ctx.params.id;
    if (!isUuid(id)) throw new AppError({ status: 404, code: 'not_found', description: 'No such directory.' });
    try {
      return await s().directories.get(id);
    } catch (err) {
      if (err instanceof AppError && err.status === 404)
        throw new AppError({ status: 404, code: 'not_found', description: 'No such directory.' });
      throw err;
    }
  }

  // ── Directories ────────────────────────────────────────────────────────────────────────────────

  r.get('/directories', async function consoleDirectories(ctx) {
    const page = pageOf(ctx);
    const dirs = await s().directories.list({ pageOffset: (page - 1) * PAGE, pageLimit: PAGE });
    const rows = dirs.map((d) => [
      `<a href="${dirPath(d.id)}">${e(d.name || d.id)}</a>`,
      e(d.tenant),
      e(d.product),
      e(typeLabel(d.type)),
      d.deactivated ? '<strong>deactivated</strong>' : 'active',
      d.webhook.endpoint ? `<code>${e(d.webhook.endpoint)}</code>` : '<span class="muted">none</span>',
    ]);
    const body = `<p>Directories receive users and groups from an identity provider over SCIM (or are synced from Google)
and send their changes to the application's webhook. Create them through the API
(<code>POST /api/v1/dsync</code>) or let a tenant's administrator do it with a <a href="/console/directories/setup-links">setup link</a>.</p>
${table('Directories', ['Name', 'Tenant', 'Product', 'Type', 'Status', 'Webhook'], rows, 'No directories yet.')}
${pager('/console/directories', page, dirs.length, 'Directories')}
<p><a href="/console/directories/setup-links">Setup links</a></p>`;
    env.page(ctx, 'Directories', body);
  });

  // ── Setup links (registered before `/directories/:id`) ─────────────────────────────────────────

  async function setupLinksPage(
    ctx: Context,
    o: { reveal?: SetupLink; created?: SetupLink; error?: string; form?: Record<string, string> } = {},
  ) {
    const csrf = env.session(ctx).csrf;
    const page = pageOf(ctx);
    const { data } = await s().setupLinks.byProduct(
      undefined,
      { pageOffset: (page - 1) * PAGE, pageLimit: PAGE },
      { all: true },
    );
    const now = c.clock.now().getTime();
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

  r.get('/directories/setup-links', async function consoleSetupLinks(ctx) {
    await setupLinksPage(ctx);
  });

  r.post('/directories/setup-links', async function consoleSetupLinkCreate(ctx) {
    const form = Object.fromEntries(
      ['tenant', 'product', 'name', 'webhook_url', 'expiry_days'].map((k) => [k, env.field(ctx, k).trim()]),
    );
    const days = Number.parseInt(form.expiry_days ?? '', 10);
    try {
      const link = await s().setupLinks.create({
        tenant: form.tenant,
        product: form.product,
        name: form.name,
        webhook_url: form.webhook_url,
        webhook_secret: env.field(ctx, 'webhook_secret'),
        ...(Number.isInteger(days) && days > 0 ? { expiryDays: days } : {}),
        regenerate: env.field(ctx, 'regenerate') === 'yes',
      });
      c.log.info({ operator: env.session(ctx).sub, setupLink: link.setupID }, 'console: setup link created');
      await setupLinksPage(ctx, { created: link });
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      await setupLinksPage(ctx, { error: err.description || err.code, form });
    }
  });

  r.post('/directories/setup-links/:sid/reveal', async function consoleSetupLinkReveal(ctx) {
    const link = await s().setupLinks.get(ctx.params.sid);
    c.log.info({ operator: env.session(ctx).sub, setupLink: link.setupID }, 'console: setup link shown');
    await setupLinksPage(ctx, { reveal: link });
  });

  r.post('/directories/setup-links/:sid/delete', async function consoleSetupLinkDelete(ctx) {
    const link = await s().setupLinks.get(ctx.params.sid);
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
    await s().setupLinks.remove({ id: link.setupID });
    c.log.info({ operator: env.session(ctx).sub, setupLink: link.setupID }, 'console: setup link deleted');
    ctx.status = 303;
    ctx.redirect('/console/directories/setup-links?done=link-deleted');
  });

  // ── One directory ──────────────────────────────────────────────────────────────────────────────

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
    const body = `${subNav(ctx, d)}
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
    directoryPage(ctx, await directory(ctx));
  });

  r.post('/directories/:id/reveal', async function consoleDirectoryReveal(ctx) {
    const d = await directory(ctx);
    const which = env.field(ctx, 'which') === 'webhook' ? 'webhook' : 'scim';
    c.log.info({ operator: env.session(ctx).sub, directoryId: d.id, secret: which }, 'console: directory secret shown');
    directoryPage(ctx, d, which);
  });

  r.get('/directories/:id/users', async function consoleDirectoryUsers(ctx) {
    const d = await directory(ctx);
    const page = pageOf(ctx);
    const users = await s().users.list({ directoryId: d.id }, { pageOffset: (page - 1) * PAGE, pageLimit: PAGE });
    const rows = users.map((u) => [
      `<a href="${dirPath(d.id)}/users/${encodeURIComponent(u.id)}">${e([u.first_name, u.last_name].filter(Boolean).join(' ') || u.id)}</a>`,
      e(u.email ?? ''),
      e(typeof u.raw?.userName === 'string' ? u.raw.userName : ''),
      u.active ? 'active' : '<strong>inactive</strong>',
    ]);
    env.page(
      ctx,
      `Users of ${d.name || d.id}`,
      `${subNav(ctx, d)}${table('Users, newest first', ['Name', 'E-mail', 'User name', 'Status'], rows, 'No users yet.')}${pager(`${dirPath(d.id)}/users`, page, users.length, 'Users')}`,
    );
  });

  r.get('/directories/:id/users/:uid', async function consoleDirectoryUser(ctx) {
    const d = await directory(ctx);
    const u = await s().users.get({ directoryId: d.id }, ctx.params.uid);
    const body = `${subNav(ctx, d)}
<dl>
<dt>ID</dt><dd><code>${e(u.id)}</code></dd>
<dt>Name</dt><dd>${e([u.first_name, u.last_name].filter(Boolean).join(' '))}</dd>
<dt>E-mail</dt><dd>${e(u.email ?? '')}</dd>
<dt>Status</dt><dd>${u.active ? 'active' : 'inactive'}</dd>
</dl>
<h2>Attributes as the identity provider sent them</h2>
<pre>${e(JSON.stringify(u.raw, null, 2))}</pre>`;
    env.page(ctx, `User ${u.email || u.id}`, body);
  });

  r.get('/directories/:id/groups', async function consoleDirectoryGroups(ctx) {
    const d = await directory(ctx);
    const page = pageOf(ctx);
    const groups = await s().groups.list({ directoryId: d.id }, { pageOffset: (page - 1) * PAGE, pageLimit: PAGE });
    const rows = groups.map((g) => [
      `<a href="${dirPath(d.id)}/groups/${encodeURIComponent(g.id)}">${e(g.name || g.id)}</a>`,
      `<code>${e(g.id)}</code>`,
    ]);
    env.page(
      ctx,
      `Groups of ${d.name || d.id}`,
      `${subNav(ctx, d)}${table('Groups (select one for its members)', ['Name', 'ID'], rows, 'No groups yet.')}${pager(`${dirPath(d.id)}/groups`, page, groups.length, 'Groups')}`,
    );
  });

  r.get('/directories/:id/groups/:gid', async function consoleDirectoryGroup(ctx) {
    const d = await directory(ctx);
    const scope = { directoryId: d.id };
    const g = await s().groups.get(scope, ctx.params.gid);
    const page = pageOf(ctx);
    const members = await s().groups.getMembers(scope, {
      groupId: g.id,
      pageOffset: (page - 1) * PAGE,
      pageLimit: PAGE,
    });
    const rows = await Promise.all(
      members.map(async (m) => {
        const u = await s()
          .users.get(scope, m.user_id)
          .catch(() => undefined);
        return u
          ? [
              `<a href="${dirPath(d.id)}/users/${encodeURIComponent(u.id)}">${e([u.first_name, u.last_name].filter(Boolean).join(' ') || u.id)}</a>`,
              e(u.email ?? ''),
              u.active ? 'active' : '<strong>inactive</strong>',
            ]
          : [`<code>${e(m.user_id)}</code>`, '<span class="muted">not (yet) a user of this directory</span>', ''];
      }),
    );
    const body = `${subNav(ctx, d)}
<dl><dt>Group ID</dt><dd><code>${e(g.id)}</code></dd><dt>Members</dt><dd>${g.members.length}</dd></dl>
${table(`Members of ${g.name}`, ['Name', 'E-mail', 'Status'], rows, 'This group has no members.')}
${pager(`${dirPath(d.id)}/groups/${encodeURIComponent(g.id)}`, page, members.length, 'Members')}`;
    env.page(ctx, `Group ${g.name || g.id}`, body);
  });

  // ── Events and delivery logs of a directory ─────────────────────────────────────────────────────

  r.get('/directories/:id/events', async function consoleDirectoryEvents(ctx) {
    const d = await directory(ctx);
    const after = typeof ctx.query.after === 'string' ? ctx.query.after : undefined;
    const p = await s().feed.list({ directoryId: d.id }, after, PAGE);
    const rows = p.data.map((ev: WebhookEvent) => [
      String(ev.seq),
      `<code>${e(ev.event)}</code>`,
      e(eventSubject(ev)),
      when(ev.created_at),
      `<code>${e(ev.id)}</code>`,
    ]);
    const next = p.has_more
      ? `<nav aria-label="Events pages" class="actions"><a href="${e(`${dirPath(d.id)}/events?after=${encodeURIComponent(p.cursor)}`)}">Next events</a></nav>`
      : '';
    const body = `${subNav(ctx, d)}
<p>The directory's committed events, oldest first (as webhooks deliver them, in order). Events older than the retention period are purged.</p>
${after ? `<p><a href="${dirPath(d.id)}/events">From the beginning</a></p>` : ''}
${table('Events', ['Seq', 'Event', 'Subject', 'When', 'Event ID'], rows, 'No events.')}
${next}`;
    env.page(ctx, `Events of ${d.name || d.id}`, body);
  });

  r.get('/directories/:id/webhook-logs', async function consoleDirectoryLogs(ctx) {
    const d = await directory(ctx);
    const page = pageOf(ctx);
    const logs = await s().webhookLogs.list({ directoryId: d.id }, { pageOffset: (page - 1) * PAGE, pageLimit: PAGE });
    const rows = logs.map((l) => [
      `<a href="${dirPath(d.id)}/webhook-logs/${encodeURIComponent(l.id)}">${when(l.created_at)}</a>`,
      e(logEvents(l.payload)),
      String(l.status_code),
      l.delivered ? 'delivered' : '<strong>failed</strong>',
      String(l.attempt),
      e(firstLine(l.error)),
    ]);
    const perMinute = await attemptsPerMinute(c.clock.now().getTime(), (p) =>
      p === 0 && page === 1
        ? Promise.resolve(logs)
        : s().webhookLogs.list({ directoryId: d.id }, { pageOffset: p * PAGE, pageLimit: PAGE }),
    );
    const chart = barChart({
      id: 'chart-attempts',
      title: 'Delivery attempts',
      series: [
        { label: 'delivered', colour: '#1d7a35', values: perMinute.delivered },
        { label: 'failed', colour: '#a00000', values: perMinute.failed },
      ],
    });
    const body = `${subNav(ctx, d)}
<div class="cards">${chart}</div>
${perMinute.complete ? '' : `<p class="muted">The chart shows the newest ${CHART_PAGES * PAGE} attempts of the last hour only.</p>`}
${
  d.log_webhook_events
    ? '<p>Every delivery attempt to the webhook, newest first.</p>'
    : '<p class="notice">Delivery logging is off for this directory (<code>log_webhook_events</code>): new attempts are not recorded. Failed deliveries are on the <a href="/console/webhooks">Webhooks</a> page either way.</p>'
}
${table('Delivery attempts', ['Started', 'Event', 'Status code', 'Result', 'Attempt', 'Error'], rows, 'No delivery attempts recorded.')}
${pager(`${dirPath(d.id)}/webhook-logs`, page, logs.length, 'Delivery log')}
<div class="actions">${postButton(`${dirPath(d.id)}/webhooks/retry`, 'Re-enqueue failed deliveries of this directory', env.session(ctx).csrf)}</div>`;
    env.page(ctx, `Delivery log of ${d.name || d.id}`, body);
  });

  r.get('/directories/:id/webhook-logs/:lid', async function consoleDirectoryLog(ctx) {
    const d = await directory(ctx);
    const l = await s().webhookLogs.get({ directoryId: d.id }, ctx.params.lid);
    if (!l) throw new AppError({ status: 404, code: 'not_found', description: 'No such delivery attempt.' });
    const body = `${subNav(ctx, d)}
<dl>
<dt>Started</dt><dd>${when(l.created_at)}</dd>
<dt>Completed</dt><dd>${when(l.completed_at)}</dd>
<dt>Endpoint</dt><dd><code>${e(l.webhook_endpoint)}</code></dd>
<dt>Status code</dt><dd>${l.status_code}</dd>
<dt>Result</dt><dd>${l.delivered ? 'delivered' : 'failed'}</dd>
<dt>Attempt</dt><dd>${l.attempt}</dd>
<dt>Error</dt><dd>${e(l.error ?? 'none')}</dd>
</dl>
<h2>Body sent</h2>
<pre>${e(pretty(l.payload))}</pre>`;
    env.page(ctx, 'Delivery attempt', body);
  });

  r.post('/directories/:id/webhooks/retry', async function consoleDirectoryRetry(ctx) {
    const d = await directory(ctx);
    const rep = await s().webhooks.retry(d.id);
    c.log.info({ operator: env.session(ctx).sub, directoryId: d.id, ...rep }, 'console: deliveries re-enqueued');
    ctx.status = 303;
    ctx.redirect(`/console/webhooks?done=${rep.jobs + rep.batches ? 'webhooks-retried' : 'webhooks-none'}`);
  });

  // ── Webhooks: failed deliveries of every directory ─────────────────────────────────────────────

  r.get('/webhooks', async function consoleWebhooks(ctx) {
    const csrf = env.session(ctx).csrf;
    const failed = [
      ...(await listFailedJobs(c.db, { task: DELIVER_TASK }, 100)),
      ...(await listFailedJobs(c.db, { task: LIFECYCLE_TASK }, 100)),
    ];
    const names = new Map<string, string>();
    for (const j of failed) {
      const id = j.queue?.startsWith('dsync:') ? j.queue.slice('dsync:'.length) : '';
      if (id && isUuid(id) && !names.has(id)) {
        const d = await s().directories.load(id);
        names.set(id, d ? d.name || d.id : '');
      }
    }
    const rows = failed.map((j) => {
      const id = j.queue?.startsWith('dsync:') ? j.queue.slice('dsync:'.length) : '';
      const name = names.get(id);
      return [
        String(j.id),
        j.task === LIFECYCLE_TASK
          ? 'lifecycle webhook (<code>dsync.webhook_url</code>)'
          : name
            ? `<a href="${dirPath(id)}/webhook-logs">${e(name)}</a>`
            : `<span class="muted">deleted directory</span>`,
        `${j.attempts}/${j.maxAttempts}`,
        when(j.updatedAt),
        j.lastError
          ? `<details><summary>${e(firstLine(j.lastError).slice(0, 200))}</summary><pre>${e(j.lastError)}</pre></details>`
          : '',
        postButton('/console/webhooks/retry', `Re-enqueue delivery job ${j.id}`, csrf, {
          fields: { job: String(j.id) },
        }),
      ];
    });
    const dirs = await s().directories.list({ pageOffset: 0, pageLimit: PAGE });
    const dirRows = dirs.map((d) => [
      `<a href="${dirPath(d.id)}">${e(d.name || d.id)}</a>`,
      d.webhook.endpoint ? `<code>${e(d.webhook.endpoint)}</code>` : '<span class="muted">none</span>',
      yesNo(d.log_webhook_events),
      `<a href="${dirPath(d.id)}/events">Events</a>`,
      `<a href="${dirPath(d.id)}/webhook-logs">Delivery log</a>`,
    ]);
    const body = `<p>Each directory's events go to its webhook in order, one delivery job per directory. A job that used up its
attempts (<code>dsync.webhook.max_attempts</code>) stays failed and its events wait; re-enqueue it once the receiver works again
and delivery resumes, in order, from the first undelivered event.</p>
<h2>Failed deliveries</h2>
${table('Failed delivery jobs', ['Job', 'Directory', 'Attempts', 'Last attempt', 'Last error', 'Action'], rows, 'No failed deliveries.')}
<div class="actions">${postButton('/console/webhooks/retry-all', 'Re-enqueue every failed delivery', csrf, { cls: 'secondary' })}</div>
<h2>Events and delivery logs by directory</h2>
${table('Directories', ['Directory', 'Webhook', 'Logged', 'Events', 'Delivery log'], dirRows, 'No directories yet.')}
${dirs.length >= PAGE ? '<p><a href="/console/directories?page=2">More directories</a></p>' : ''}`;
    env.page(ctx, 'Webhooks', body, { notice: done(ctx) });
  });

  r.post('/webhooks/retry', async function consoleWebhookRetry(ctx) {
    const job = env.field(ctx, 'job');
    let ids: number[] = [];
    if (/^\d{1,18}$/.test(job)) {
      for (const task of [DELIVER_TASK, LIFECYCLE_TASK]) {
        ids = await retryFailedJobs(c.db, { task, ids: [Number(job)] });
        if (ids.length) break;
      }
    }
    if (ids.length) c.log.info({ operator: env.session(ctx).sub, jobs: ids }, 'console: delivery re-enqueued');
    ctx.status = 303;
    ctx.redirect(`/console/webhooks?done=${ids.length ? 'webhook-retried' : 'webhooks-none'}`);
  });

  r.post('/webhooks/retry-all', async function consoleWebhookRetryAll(ctx) {
    const rep = await s().webhooks.retry();
    c.log.info({ operator: env.session(ctx).sub, ...rep }, 'console: deliveries re-enqueued');
    ctx.status = 303;
    ctx.redirect(`/console/webhooks?done=${rep.jobs + rep.batches ? 'webhooks-retried' : 'webhooks-none'}`);
  });
}
