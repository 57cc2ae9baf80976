/** The console's pages of a directory's users: the list (newest first), and one user as the identity provider sent it. */
import type { Registrar } from '../../core/http/routes.ts';
import { dirPath, loadDirectory, PAGE, pageOf, pager, subNav } from '../directory-nav.ts';
import type { ConsoleEnv } from '../env.ts';
import { e, table } from '../html.ts';

export function directoryUserPages(env: ConsoleEnv, r: Registrar): void {
  const dsync = env.c.dsync.services;

  r.get('/directories/:id/users', async function consoleDirectoryUsers(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const page = pageOf(ctx);
    const users = await dsync.users.list({ directoryId: d.id }, { pageOffset: (page - 1) * PAGE, pageLimit: PAGE });
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
    const d = await loadDirectory(dsync, ctx);
    const u = await dsync.users.get({ directoryId: d.id }, ctx.params.uid);
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
}
