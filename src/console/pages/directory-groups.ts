/** The console's pages of a directory's groups: the list, and one group with its members. */
import type { Registrar } from '../../core/http/routes.ts';
import { dirPath, loadDirectory, PAGE, pageOf, pager, subNav } from '../directory-nav.ts';
import type { ConsoleEnv } from '../env.ts';
import { e, table } from '../html.ts';

export function directoryGroupPages(env: ConsoleEnv, r: Registrar): void {
  const dsync = env.c.dsync.services;

  r.get('/directories/:id/groups', async function consoleDirectoryGroups(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const page = pageOf(ctx);
    const groups = await dsync.groups.list({ directoryId: d.id }, { pageOffset: (page - 1) * PAGE, pageLimit: PAGE });
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
    const d = await loadDirectory(dsync, ctx);
    const scope = { directoryId: d.id };
    const g = await dsync.groups.get(scope, ctx.params.gid);
    const page = pageOf(ctx);
    const members = await dsync.groups.getMembers(scope, {
      groupId: g.id,
      pageOffset: (page - 1) * PAGE,
      pageLimit: PAGE,
    });
    const rows = await Promise.all(
      members.map(async (m) => {
        const u = await dsync.users.get(scope, m.user_id).catch(() => undefined);
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
}
