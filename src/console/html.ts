/**
 * The operator console's HTML: one layout (skip link, navigation, main), one inline style sheet and
 * one small inline script (copy buttons only; every page works without it), both under the
 * per-response nonce of `sendHtml`. Every value is escaped with `e`; builders return strings.
 */
import { escapeHtml as e } from '../core/http/html.ts';

export { e };

export const STYLE = `
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1a1a1a;background:#fff}
a{color:#0b4f9c}
a:hover{color:#083a73}
:focus-visible{outline:3px solid #c25e00;outline-offset:2px}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem}
.skip:focus{left:.5rem}
header{display:flex;flex-wrap:wrap;align-items:center;gap:1rem;padding:.5rem 1rem;background:#12355b;color:#fff}
header a{color:#fff}
header .brand{font-weight:bold;font-size:1.1rem;text-decoration:none}
header form{margin:0 0 0 auto;display:flex;align-items:center;gap:.5rem}
header button{background:#fff;color:#12355b;border-color:#fff}
header button.secondary{background:transparent;color:#fff}
nav ul{display:flex;flex-wrap:wrap;gap:.25rem 1rem;list-style:none;margin:0;padding:0}
nav a[aria-current=page]{font-weight:bold;text-decoration:underline 3px}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.6rem;margin:.5rem 0 1rem}
h2{font-size:1.25rem;margin:1.5rem 0 .5rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}
th,td{border-bottom:1px solid #bbb;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#eef2f6}
caption{text-align:left;font-weight:bold;padding:.25rem 0}
code,pre{font-family:ui-monospace,monospace;background:#f0f0f0;padding:0 .2rem;word-break:break-all}
pre{padding:.5rem;white-space:pre-wrap}
label{display:block;margin:.6rem 0 .2rem;font-weight:600}
.hint{display:block;font-weight:normal;color:#444;font-size:.9rem}
input[type=text],input[type=url],input[type=search],input[type=number],select,textarea{display:block;width:100%;max-width:40rem;padding:.4rem;font:inherit;border:1px solid #555;border-radius:3px}
textarea{min-height:5rem}
fieldset{border:1px solid #888;border-radius:4px;margin:1rem 0;padding:.5rem 1rem;max-width:42rem}
.check{display:flex;gap:.5rem;align-items:center;font-weight:normal;margin:.3rem 0}
button,.button{display:inline-block;font:inherit;padding:.35rem .9rem;margin:.25rem .5rem .25rem 0;border:1px solid #0b4f9c;border-radius:3px;background:#0b4f9c;color:#fff;cursor:pointer;text-decoration:none}
button.secondary,.button.secondary{background:#fff;color:#0b4f9c}
button.danger,.button.danger{background:#a00000;border-color:#a00000;color:#fff}
.actions{display:flex;flex-wrap:wrap;align-items:center;gap:.25rem;margin:.5rem 0}
.actions form{margin:0}
.notice{border-left:4px solid #1d7a35;background:#eaf6ed;padding:.5rem 1rem;margin:1rem 0}
.error{border-left:4px solid #a00000;background:#fbeaea;padding:.5rem 1rem;margin:1rem 0}
.secret{border:2px solid #c25e00;background:#fff6ec;padding:.5rem 1rem;margin:1rem 0}
.muted{color:#444}
.cards{display:flex;flex-wrap:wrap;gap:1rem}
.card{border:1px solid #bbb;border-radius:4px;padding:.5rem 1rem;min-width:20rem;flex:1}
svg text{font:12px system-ui,sans-serif;fill:#1a1a1a}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}
dt{font-weight:600}
dd{margin:0}
`;

/** Copy buttons: present but hidden without JavaScript; the script shows them and copies the target's text. */
export const SCRIPT = `
for (const b of document.querySelectorAll('button[data-copy]')) {
  b.hidden = false;
  b.addEventListener('click', async () => {
    const t = document.getElementById(b.dataset.copy);
    if (!t) return;
    try { await navigator.clipboard.writeText(t.textContent || ''); b.textContent = 'Copied'; }
    catch { b.textContent = 'Copy failed: select the text'; }
  });
}
`;

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
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(p.title)} · gatehouse console</title>
<style nonce="${e(p.nonce)}">${STYLE}</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${header}
<main id="main" tabindex="-1">
<h1>${e(p.title)}</h1>
${p.notice ? `<p class="notice" role="status">${e(p.notice)}</p>` : ''}
${p.body}
</main>
<script nonce="${e(p.nonce)}">${SCRIPT}</script>
</body>
</html>
`;
}

export const csrfField = (token: string) => `<input type="hidden" name="csrf" value="${e(token)}">`;

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

/** A table with a caption and header row; `rows` are already-escaped cell HTML. */
export function table(caption: string, head: string[], rows: string[][], empty = 'Nothing here yet.'): string {
  if (!rows.length) return `<p class="muted">${e(empty)}</p>`;
  return `<table>
<caption>${e(caption)}</caption>
<thead><tr>${head.map((h) => `<th scope="col">${e(h)}</th>`).join('')}</tr></thead>
<tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('\n')}</tbody>
</table>`;
}

/** A secret shown once or behind a reveal: `<details>` reveals it without JavaScript, the button copies it. */
export function secretBox(id: string, label: string, value: string, open = false): string {
  return `<details class="secret"${open ? ' open' : ''}>
<summary>${e(label)}</summary>
<p><code id="${e(id)}">${e(value)}</code></p>
<button type="button" class="secondary" data-copy="${e(id)}" hidden>Copy ${e(label.toLowerCase())}</button>
</details>`;
}

/** The first line of an error, for tables (the whole text is in the row's details). */
export const firstLine = (s: string | null) => (s ?? '').split('\n')[0] ?? '';

export const when = (d: Date | string | null | undefined) =>
  d
    ? e(
        new Date(d)
          .toISOString()
          .replace('T', ' ')
          .replace(/\.\d+Z$/, ' UTC'),
      )
    : '';
