/**
 * The front-channel logout page (Hydra's): one hidden iframe per front-channel URL and a script
 * that goes on to the post-logout URL once every frame has loaded, or after 7 seconds at most (a
 * meta refresh does the same without JavaScript). Every value is escaped for its context: HTML
 * attributes and text with entities, the script's data as JSON with `<`, `>`, `&` and the line
 * separators escaped, so no URL can end the script or an attribute. The page is sent through
 * `sendHtml` (src/core/http/html.ts): the script and style carry the response's nonce (no inline
 * event handlers, which the CSP would block), and frames may load only from the origins of the
 * front-channel URLs (`frontchannelFrameSources`).
 */
import { cspSource, escapeHtml, scriptJson } from '../../core/http/html.ts';

export { escapeHtml, scriptJson };

/** Seconds before the page moves on even if a frame never loads (Hydra: 7). */
export const FRONTCHANNEL_TIMEOUT_S = 7;

/** The `frame-src` of the page: the origins of the RPs' logout URIs, nothing else. */
export const frontchannelFrameSources = (urls: readonly string[]) =>
  urls.map(cspSource).filter((s): s is string => s !== undefined);

export function frontchannelPage(redirectTo: string, urls: readonly string[], nonce = ''): string {
  const to = escapeHtml(redirectTo);
  const n = escapeHtml(nonce);
  const frames = urls.map((u) => `<iframe src="${escapeHtml(u)}"></iframe>`).join('\n');
  return `<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>Logging out</title>
<meta http-equiv="refresh" content="${FRONTCHANNEL_TIMEOUT_S}; URL=${to}">
<style nonce="${n}">iframe { position: absolute; left: 0; top: 0; height: 0; width: 0; border: none; }</style>
</head>
<body>
<noscript><p>JavaScript is disabled: you will be redirected in ${FRONTCHANNEL_TIMEOUT_S} seconds, or click <a href="${to}">here</a> to continue.</p></noscript>
<p id="redir" hidden>Redirection takes unusually long. If you are not redirected within the next seconds, click <a href="${to}">here</a> to continue.</p>
${frames}
<script nonce="${n}">
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
var frames = document.getElementsByTagName('iframe');
for (var i = 0; i < frames.length; i++) frames[i].addEventListener('load', done);
setTimeout(redirect, ${FRONTCHANNEL_TIMEOUT_S * 1000});
setTimeout(function () { document.getElementById('redir').hidden = false; }, 2000);
</script>
</body>
</html>
`;
}
