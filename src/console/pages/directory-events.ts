/** The console's page of a directory's events: the committed events, oldest first, as webhooks deliver them. */
import type { Registrar } from '../../core/http/routes.ts';
import type { WebhookEvent } from '../../dsync/index.ts';
import { dirPath, loadDirectory, PAGE, subNav } from '../directory-nav.ts';
import type { ConsoleEnv } from '../env.ts';
import { e, table, when } from '../html.ts';

/** A short description of an event's subject (user e-mail, group name). */
function eventSubject(ev: { event: string; data?: unknown }): string {
  const d = (ev.data ?? {}) as Record<string, unknown>;
  const g = d.group as Record<string, unknown> | undefined;
  const user = typeof d.email === 'string' ? d.email : [d.first_name, d.last_name].filter(Boolean).join(' ');
  if (ev.event.startsWith('group.user_')) return `${user} · group ${typeof g?.name === 'string' ? g.name : ''}`;
  if (ev.event.startsWith('group.')) return typeof d.name === 'string' ? d.name : '';
  return user;
}

export function directoryEventPages(env: ConsoleEnv, r: Registrar): void {
  const dsync = env.c.dsync.services;

  r.get('/directories/:id/events', async function consoleDirectoryEvents(ctx) {
    const d = await loadDirectory(dsync, ctx);
    const after = typeof ctx.query.after === 'string' ? ctx.query.after : undefined;
    const p = await dsync.feed.list({ directoryId: d.id }, after, PAGE);
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
}
