/**
 * HTTP routes of Google Workspace sync (Jackson pages/api/scim/oauth/*, pages/api/v1/dsync/cron/
 * sync-google.ts).
 *
 * Public listener (where `dsync.external_url` points: the admin's browser must reach both):
 * - `GET {authorize_path}?directoryId=` → 302 to Google's consent screen. It also sets a short-lived
 *   HttpOnly cookie (path: the callback path, SameSite=Lax so it comes back with Google's
 *   top-level redirect) holding a nonce that the signed state carries too.
 * - `GET {callback_path}?code&state` → checks the state and the cookie, exchanges the code, stores
 *   the tokens; `200` text as Jackson. Any problem is a clear `{error: {message}}` (no exchange
 *   happens for a bad state).
 * Admin listener (behind the Api-Key guard): `ANY /api/v1/dsync/cron/sync-google` → a forced sweep is
 * enqueued; `{message: 'Sync started'}`.
 */

import type { Context } from 'koa';
import { cookieOptions } from '../../../core/http/cookies.ts';
import { noStore } from '../../../core/http/params.ts';
import type { Registrar } from '../../../core/http/routes.ts';
import { dsyncError, dsyncMessage } from '../../errors.ts';
import { bodyObject } from '../../v1-handlers.ts';
import { authorizeQuery, callbackQuery } from './schemas.ts';
import type { GoogleService } from './service.ts';
import { STATE_TTL_MS } from './state.ts';

export const STATE_COOKIE = 'gatehouse_google_authorization';
export const AUTHORIZED_TEXT = 'Authorized done successfully. You may close this window.';

export interface GoogleRouteOptions {
  authorizePath: string;
  callbackPath: string;
  /** `serve.cookies.secure` and not `dev` */
  secureCookies: boolean;
}

/** The state cookie: only on the callback path; SameSite=Lax so that Google's top-level redirect brings it. */
const stateCookie = (ctx: Context, o: GoogleRouteOptions) =>
  cookieOptions(ctx, { secure: o.secureCookies, sameSite: 'lax', path: o.callbackPath });

export function googlePublicRoutes(r: Registrar, s: { google: GoogleService }, o: GoogleRouteOptions): void {
  /** Starts the authorization of a Google directory (the directory's `google_authorization_url`). */
  r.get(o.authorizePath, async (ctx: Context) => {
    const q = authorizeQuery.safeParse(ctx.query);
    if (!q.success) throw dsyncMessage(400, 'Invalid query parameters.');
    if (!q.data.directoryId) throw dsyncError(400, 'Missing required parameters.');
    const { authorizationUrl, nonce } = await s.google.startAuthorization({
      directoryId: q.data.directoryId,
      token: q.data.token,
    });
    ctx.cookies.set(STATE_COOKIE, nonce, { ...stateCookie(ctx, o), maxAge: STATE_TTL_MS });
    noStore(ctx);
    ctx.status = 302;
    ctx.redirect(authorizationUrl);
  });

  /** Google sends the admin's browser back here with the code. */
  r.get(o.callbackPath, async (ctx: Context) => {
    const q = callbackQuery.safeParse(ctx.query);
    if (!q.success) throw dsyncMessage(400, 'Invalid query parameters.');
    await s.google.completeAuthorization({ ...q.data, nonce: ctx.cookies.get(STATE_COOKIE) });
    ctx.cookies.set(STATE_COOKIE, null, stateCookie(ctx, o));
    noStore(ctx);
    ctx.type = 'text/plain';
    ctx.body = AUTHORIZED_TEXT;
  });

  for (const path of [o.authorizePath, o.callbackPath])
    r.all(path, (ctx) => {
      throw dsyncMessage(405, `Method ${ctx.method} not allowed.`, { Allow: 'GET' });
    });
}

export function googleAdminRoutes(r: Registrar, s: { google: GoogleService }): void {
  /**
   * Mints a short-lived link that starts the Google authorization of a directory (the public
   * authorize route refuses starts without one). `{replace_workspace: true}` lets the authorization
   * connect a different Workspace than the one recorded.
   */
  r.post('/:directoryId/google/authorization-link', async (ctx: Context) => {
    const body = bodyObject(ctx);
    const replace = body.replace_workspace === true || body.replace_workspace === 'true';
    noStore(ctx);
    ctx.body = {
      data: await s.google.authorizationLink({ directoryId: ctx.params.directoryId, replaceWorkspace: replace }),
    };
  });

  /** Syncs every Google directory soon (Jackson answers before the sync runs, too). */
  r.all('/cron/sync-google', async (ctx: Context) => {
    await s.google.requestSweep();
    ctx.body = { message: 'Sync started' };
  });
}
