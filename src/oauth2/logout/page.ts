/**
 * The front-channel logout page (Hydra's): one hidden iframe per front-channel URL and a script
 * that goes on to the post-logout URL once every frame has loaded, or after 7 seconds at most (a
 * meta refresh does the same without JavaScript). Every value is escaped for its context: HTML
 * attributes and text with entities, the script's data as JSON with `<`, `>`, `&` and the line
 * separators escaped, so no URL can end the script or an attribute.
 */

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ENTITIES[c] as string);

/** JSON that is safe inside an inline `<script>`. */
export const scriptJson = (v: unknown) =>
  JSON.stringify(v)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

/** Seconds before the page moves on even if a frame never loads (Hydra: 7). */
export const FRONTCHANNEL_TIMEOUT_S = 7;

export function frontchannelPage(redirectTo: string, urls: readonly string[]): string {
  const to = escapeHtml(redirectTo);
  const frames = urls.map((u) => `<iframe src="${escapeHtml(u)}" onload="done()"></iframe>`).join('\n');
  return `<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>Logging out</title>
<meta http-equiv="refresh" content="${FRONTCHANNEL_TIMEOUT_S}; URL=${to}">
<style>iframe { position: absolute; left: 0; top: 0; height: 0; width: 0; border: none; }</style>
<script>
var total = ${scriptJson(urls.length)};
var redir = ${scriptJson(redirectTo)};
var moved = false;
function redirect() {
  if (moved) return;
  moved = true;
  window.location.replace(redir);
}
function done() {
  total--;
  if (total < 1) setTimeout(redirect, 500);
}
setTimeout(redirect, ${FRONTCHANNEL_TIMEOUT_S * 1000});
setTimeout(function () { document.getElementById('redir').style.display = 'block'; }, 2000);
</script>
</head>
<body>
<noscript><p>JavaScript is disabled: you will be redirected in ${FRONTCHANNEL_TIMEOUT_S} seconds, or click <a href="${to}">here</a> to continue.</p></noscript>
<p id="redir" style="display: none">Redirection takes unusually long. If you are not redirected within the next seconds, click <a href="${to}">here</a> to continue.</p>
${frames}
</body>
</html>
`;
}
