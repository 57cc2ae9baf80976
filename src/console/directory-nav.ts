/**
 * What the directory-sync pages share: the paths and labels of directories, the paging of their
 * lists, a directory's sub-navigation, the directory of `:id`, and the results of their actions.
 */
import type { Context } from 'koa';
import { AppError } from '../core/errors.ts';
import { DIRECTORY_TYPES, type DirectoryRecord, type DsyncServices, isUuid } from '../dsync/index.ts';
import { e } from './html.ts';

/** Rows per page of every directory list. */
export const PAGE = 50;

/** Results of the directory pages' actions, shown after the redirect (a fixed list: a link cannot put words on a page). */
const RESULTS: Record<string, string> = {
  'webhook-retried': 'The failed delivery was re-enqueued; it runs now with a fresh attempt budget.',
  'webhooks-retried': 'The failed deliveries were re-enqueued; they run now with a fresh attempt budget.',
  'webhooks-none': 'No failed delivery matched (it may have been re-enqueued already).',
  'link-deleted': 'The setup link was deleted; its URL no longer works.',
  'directory-created': 'The directory was created.',
  'directory-updated': 'The directory was saved.',
  'directory-deactivated': 'The directory was deactivated: its identity provider’s requests have no effect.',
  'directory-activated': 'The directory was reactivated.',
};

/** The result message of `?done=`, if it is one of RESULTS. */
export const done = (ctx: Context) => (typeof ctx.query.done === 'string' ? RESULTS[ctx.query.done] : undefined);

/** 1-based page number of `?page=`. */
export const pageOf = (ctx: Context) => {
  const n = typeof ctx.query.page === 'string' ? Number.parseInt(ctx.query.page, 10) : 1;
  return Number.isInteger(n) && n > 0 && n < 100_000 ? n : 1;
};

/** Previous/next links of a paged list (`count`: rows on this page). */
export function pager(base: string, page: number, count: number, label: string): string {
  const sep = base.includes('?') ? '&' : '?';
  const prev = page > 1 ? `<a href="${e(`${base}${sep}page=${page - 1}`)}">Previous page</a>` : '';
  const next = count >= PAGE ? `<a href="${e(`${base}${sep}page=${page + 1}`)}">Next page</a>` : '';
  return prev || next ? `<nav aria-label="${e(label)} pages" class="actions">${prev} ${next}</nav>` : '';
}

export const typeLabel = (t: string) => (DIRECTORY_TYPES as Record<string, string>)[t] ?? t;
export const dirPath = (id: string) => `/console/directories/${encodeURIComponent(id)}`;

/** A directory's sub-pages (shown on each of them; the current one marked). */
export function subNav(ctx: Context, d: DirectoryRecord): string {
  const path = ctx.path.replace(/^\/admin(?=\/console)/, '');
  const base = dirPath(d.id);
  const items: Array<[string, string]> = [
    [base, 'Settings and SCIM'],
    [`${base}/users`, 'Users'],
    [`${base}/groups`, 'Groups'],
    [`${base}/events`, 'Events'],
    [`${base}/webhook-logs`, 'Delivery log'],
    [`${base}/health`, 'Health'],
  ];
  const current = (href: string) => (href === base ? path === base : path === href || path.startsWith(`${href}/`));
  return `<nav aria-label="Directory ${e(d.name || d.id)}"><ul class="actions">${items
    .map(([href, label]) => `<li><a href="${href}"${current(href) ? ' aria-current="page"' : ''}>${e(label)}</a></li>`)
    .join('')}</ul></nav>`;
}

/** The directory of `:id` (a 404 page for anything else). */
export async function loadDirectory(dsync: DsyncServices, ctx: Context): Promise<DirectoryRecord> {
  const id = ctx.params.id;
  if (!isUuid(id)) throw new AppError({ status: 404, code: 'not_found', description: 'No such directory.' });
  try {
    return await dsync.directories.get(id);
  } catch (err) {
    if (err instanceof AppError && err.status === 404)
      throw new AppError({ status: 404, code: 'not_found', description: 'No such directory.' });
    throw err;
  }
}
