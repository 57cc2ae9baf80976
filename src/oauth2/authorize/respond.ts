/**
 * What `/oauth2/auth` answers with. Success and errors with a trusted redirect URI go to the client
 * (303; parameters in the query, the fragment or a self-submitting form); other errors go to
 * `urls.error` (302). These are ordinary outcomes, not failures of the endpoint.
 */
import type { AppError } from '../../core/errors.ts';
import { hydraBody } from '../../core/http/errors.ts';
import { escapeHtml } from '../../core/http/html.ts';
import type { ErrorTarget, ResponseMode } from './request.ts';

export interface AbortInfo {
  error: string;
  status: number;
}

export type AuthorizeOutcome =
  | { kind: 'redirect'; status: 302 | 303; location: string; aborted?: AbortInfo }
  | { kind: 'form_post'; action: string; fields: Array<[string, string]>; aborted?: AbortInfo };

/**
 * An authorization response at the client's redirect URI. Every one, success or error and on every
 * response mode, names the issuer (`iss`, RFC 9207 §2), so that a client talking to several
 * authorization servers can tell which one answered (the mix-up attack, RFC 9207 §1).
 */
export function toClient(
  issuer: string,
  redirectUri: string,
  mode: ResponseMode,
  params: Record<string, string>,
  aborted?: AbortInfo,
): AuthorizeOutcome {
  const entries = Object.entries({ ...params, iss: issuer }).filter(([, v]) => v !== undefined);
  if (mode === 'form_post') {
    return { kind: 'form_post', action: redirectUri, fields: entries, ...(aborted ? { aborted } : {}) };
  }
  const u = new URL(redirectUri);
  u.hash = '';
  if (mode === 'fragment') {
    const frag = new URLSearchParams(entries).toString();
    return { kind: 'redirect', status: 303, location: `${u.toString()}#${frag}`, ...(aborted ? { aborted } : {}) };
  }
  for (const [k, v] of entries) u.searchParams.append(k, v);
  return { kind: 'redirect', status: 303, location: u.toString(), ...(aborted ? { aborted } : {}) };
}

export function toUi(url: string, params: Record<string, string>): AuthorizeOutcome {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return { kind: 'redirect', status: 302, location: u.toString() };
}

/** An error as the browser receives it: at the client when its redirect URI is trusted, else at `urls.error`. */
export function errorOutcome(
  e: AppError,
  target: ErrorTarget,
  o: { issuer: string; errorUrl: string; exposeDebug: boolean },
) {
  const body = hydraBody(e, o.exposeDebug);
  const aborted = { error: e.code, status: e.status };
  if (target.redirectUri) {
    return toClient(o.issuer, target.redirectUri, target.responseMode, { ...body, state: target.state }, aborted);
  }
  const u = new URL(o.errorUrl);
  u.searchParams.set('error', body.error);
  u.searchParams.set('error_description', body.error_description);
  return { kind: 'redirect', status: 302, location: u.toString(), aborted } satisfies AuthorizeOutcome;
}

/**
 * The self-submitting form of `response_mode=form_post` (OAuth 2.0 Form Post Response Mode §2).
 * Send it with `sendHtml` and `formAction: [cspSource(action)]`: the submitting script carries the
 * response's nonce, and the form may post only to the client's redirect URI.
 */
export function formPostHtml(action: string, fields: Array<[string, string]>, nonce = ''): string {
  const inputs = fields
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}"/>`)
    .join('\n');
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Submit This Form</title></head><body><form method="post" action="${escapeHtml(action)}">
${inputs}
<noscript><button type="submit">Continue</button></noscript>
</form>
<script nonce="${escapeHtml(nonce)}">document.forms[0].submit();</script>
</body></html>`;
}
