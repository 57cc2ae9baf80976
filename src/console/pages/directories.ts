/** The console's directories page: every directory, with its tenant, product, type, status and webhook. */
import type { Registrar } from '../../core/http/routes.ts';
import { dirPath, PAGE, pageOf, pager, typeLabel } from '../directory-nav.ts';
import type { ConsoleEnv } from '../env.ts';
import { e, table } from '../html.ts';

export function directoryListPages(env: ConsoleEnv, r: Registrar): void {
  const dsync = env.c.dsync.services;

  r.get('/directories', async function consoleDirectories(ctx) {
    const page = pageOf(ctx);
    const dirs = await dsync.directories.list({ pageOffset: (page - 1) * PAGE, pageLimit: PAGE });
    const rows = dirs.map((d) => [
      `<a href="${dirPath(d.id)}">${e(d.name || d.id)}</a>`,
      e(d.tenant),
      e(d.product),
      e(typeLabel(d.type)),
      d.deactivated ? '<strong>deactivated</strong>' : 'active',
      d.webhook.endpoint ? `<code>${e(d.webhook.endpoint)}</code>` : '<span class="muted">none</span>',
    ]);
    const body = `<p>Directories receive users and groups from an identity provider over SCIM (or are synced from Google)
and send their changes to the application's webhook. Create them here, through the API
(<code>POST /api/v1/dsync</code>), or let a tenant's administrator do it with a <a href="/console/directories/setup-links">setup link</a>.</p>
${table('Directories', ['Name', 'Tenant', 'Product', 'Type', 'Status', 'Webhook'], rows, 'No directories yet.')}
${pager('/console/directories', page, dirs.length, 'Directories')}
<div class="actions"><a class="button" href="/console/directories/new">New directory</a>
<a class="button secondary" href="/console/directories/setup-links">Setup links</a></div>`;
    env.page(ctx, 'Directories', body);
  });
}
