/**
 * Hydra's fallback pages on the public listener, shown when a `urls.*` key is not set: the login,
 * consent, logout and device verification UIs (200, "configuration key … is not set"), the
 * post-logout page ("You logged out successfully!"), the device success page and the error page (500, listing `error`, `error_description`, `error_hint`,
 * `error_debug` from the query). Every value is HTML-escaped.
 */
import type { Context } from 'koa';
import { escapeHtml, sendHtml } from '../core/http/html.ts';
import { firstValue } from '../core/http/params.ts';

const MISSING = 'The request could not be executed because a mandatory configuration key is missing or malformed';

function page(title: string, heading: string, body: string): string {
  return `<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body>
<h1>${escapeHtml(heading)}</h1>
${body}
</body>
</html>
`;
}

const keyNote = (key: string) =>
  `<p>You are seeing this page because configuration key <code>${escapeHtml(key)}</code> is not set.</p>`;

function fallback(key: string, title = MISSING, heading = MISSING) {
  return async (ctx: Context) => {
    sendHtml(ctx, () => page(title, heading, keyNote(key)));
  };
}

export function fallbackHandlers() {
  return {
    fallbackLogin: fallback('urls.login'),
    fallbackConsent: fallback('urls.consent'),
    fallbackLogout: fallback('urls.logout'),
    fallbackPostLogout: fallback(
      'urls.post_logout_redirect',
      'You logged out successfully!',
      'The Default Post Logout URL is not set which is why you are seeing this fallback page. Your log out request however succeeded.',
    ),
    fallbackDevice: fallback('urls.device.verification'),
    fallbackDeviceDone: fallback(
      'urls.device.success',
      'You successfully authenticated on your device!',
      'The Default Post Device URL is not set which is why you are seeing this fallback page. Your device login request however succeeded.',
    ),
    fallbackError: async (ctx: Context) => {
      const q = (k: string) => escapeHtml(firstValue(ctx.query[k]) ?? '');
      const list = `<ul>
<li>Error: ${q('error')}</li>
<li>Description: ${q('error_description')}</li>
<li>Hint: ${q('error_hint')}</li>
<li>Debug: ${q('error_debug')}</li>
</ul>`;
      sendHtml(
        ctx,
        () =>
          page(
            'An OAuth 2.0 Error Occurred',
            'The OAuth2 request resulted in an error.',
            `${list}\n${keyNote('urls.error')}`,
          ),
        {},
        500,
      );
    },
  };
}
