/**
 * The operator console's HTML: one layout (skip link, navigation, main) around the page kit of
 * core/http/page-kit.ts (style sheet, copy script, tables, secrets). Every value is escaped with
 * `e`; builders return strings.
 */
import { escapeHtml as e } from '../core/http/html.ts';
import { csrfField, htmlPage } from '../core/http/page-kit.ts';

export { csrfField, secretBox, table, when } from '../core/http/page-kit.ts';
export { e };

export interface NavItem {
  href: string;
  label: string;
}

export const NAV: NavItem[] = [
  { href: '/console', label: 'Overview' },
  { href: '/console/clients', label: 'OAuth2 clients' },
  { href: '/console/keys', label: 'Key sets' },
  { href: '/console/sessions', label: 'Sessions' },
  { href: '/console/trust', label: 'Trust' },
  { href: '/console/directories', label: 'Directories' },
  { href: '/console/webhooks', label: 'Webhooks' },
  { href: '/console/jobs', label: 'Jobs' },
];

export interface LayoutInput {
  nonce: string;
  title: string;
  body: string;
  /** The signed-in operator (absent on the sign-in and error pages before sign-in). */
  operator?: { subject: string; csrf: string } | undefined;
  /** The request path (marks the current navigation entry). */
  path?: string;
  /** A one-line result of the last action (shown as a status message). */
  notice?: string | undefined;
}

const current = (path: string, href: string) =>
  href === '/console' ? path === '/console' || path === '/console/' : path === href || path.startsWith(`${href}/`);

export function layout(p: LayoutInput): string {
  const path = p.path ?? '';
  const header = p.operator
    ? `<header>
<a class="brand" href="/console">gatehouse console</a>
<nav aria-label="Console sections"><ul>${NAV.map(
        (n) => `<li><a href="${n.href}"${current(path, n.href) ? ' aria-current="page"' : ''}>${e(n.label)}</a></li>`,
      ).join('')}</ul></nav>
<form method="post" action="/console/logout">
<span>Signed in as <strong>${e(p.operator.subject)}</strong></span>
${csrfField(p.operator.csrf)}
<button type="submit">Sign out</button>
<button type="submit" class="secondary" formaction="/console/logout-everywhere">Sign out everywhere</button>
</form>
</header>`
    : `<header><span class="brand">gatehouse console</span></header>`;
  return htmlPage({
    nonce: p.nonce,
    title: p.title,
    site: 'gatehouse console',
    header,
    body: p.body,
    notice: p.notice,
  });
}

/** A one-button POST form (with the CSRF token). */
export function postButton(
  action: string,
  label: string,
  csrf: string,
  o: { cls?: string; fields?: Record<string, string> } = {},
): string {
  const hidden = Object.entries(o.fields ?? {})
    .map(([k, v]) => `<input type="hidden" name="${e(k)}" value="${e(v)}">`)
    .join('');
  return `<form method="post" action="${e(action)}">${csrfField(csrf)}${hidden}<button type="submit"${
    o.cls ? ` class="${e(o.cls)}"` : ''
  }>${e(label)}</button></form>`;
}

/**
 * The confirmation page of a destructive action: what will happen, a POST form with `confirm=yes`
 * and a way back. Works without JavaScript.
 */
export function confirmBody(o: {
  action: string;
  question: string;
  consequence: string;
  button: string;
  back: string;
  csrf: string;
  fields?: Record<string, string>;
}): string {
  const hidden = Object.entries(o.fields ?? {})
    .map(([k, v]) => `<input type="hidden" name="${e(k)}" value="${e(v)}">`)
    .join('');
  return `<p><strong>${e(o.question)}</strong></p>
<p>${e(o.consequence)}</p>
<form method="post" action="${e(o.action)}">
${csrfField(o.csrf)}${hidden}
<input type="hidden" name="confirm" value="yes">
<div class="actions"><button type="submit" class="danger">${e(o.button)}</button>
<a class="button secondary" href="${e(o.back)}">Cancel</a></div>
</form>`;
}

/** The first line of an error, for tables (the whole text is in the row's details). */
export const firstLine = (s: string | null) => (s ?? '').split('\n')[0] ?? '';
