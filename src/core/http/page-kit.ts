/**
 * The parts of gatehouse's server-rendered pages (the operator console, the setup page of a setup
 * link): one inline style sheet and one small inline script (copy buttons only; every page works
 * without it), both put under the per-response nonce of `sendHtml`, and builders that escape every
 * value with `e`.
 */
import { escapeHtml as e } from './html.ts';

export const STYLE = `
*{box-sizing:border-box}
[hidden]{display:none!important}
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

export const csrfField = (token: string) => `<input type="hidden" name="csrf" value="${e(token)}">`;

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

export const when = (d: Date | string | null | undefined) =>
  d
    ? e(
        new Date(d)
          .toISOString()
          .replace('T', ' ')
          .replace(/\.\d+Z$/, ' UTC'),
      )
    : '';

/**
 * A whole page: the document, the style sheet and the copy script under `nonce`, a skip link, the
 * site's `header` (HTML), and `main` with the title as its heading, an optional status message and
 * `body` (HTML). `site` ends the document title (`Clients · gatehouse console`).
 */
export function htmlPage(p: {
  nonce: string;
  title: string;
  site: string;
  header: string;
  body: string;
  notice?: string | undefined;
}): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(p.title)} · ${e(p.site)}</title>
<style nonce="${e(p.nonce)}">${STYLE}</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${p.header}
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
