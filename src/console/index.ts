/**
 * The operator console (`console.enabled`): server-rendered pages under `/console` on the admin
 * listener. The admin API has no authentication of its own, so the console signs operators in as an
 * OAuth 2.0 client of this very server (`gatehouse-console`): authorization code with PKCE (S256)
 * against the public listener, `state` and `nonce` checked, the ID token verified against the
 * server's JWKS, and the subject must be one of `console.operators`.
 *
 * The pages call the domains' services in process (through the container), not the admin HTTP API:
 * the job queue, the delivery logs and the metrics have no admin endpoint, and one path for all
 * pages keeps the console independent of `urls.self.admin` being reachable from the server itself.
 *
 * Every page goes through `sendHtml` (per-response nonce CSP); every POST carries the session's
 * CSRF token; destructive actions go through a confirmation page.
 */
import type { Context, Next } from 'koa';
import type { Container } from '../container.ts';
import { AppError } from '../core/errors.ts';
import { cspSource, listenerOrigin, sendHtml } from '../core/http/html.ts';
import { firstValue } from '../core/http/params.ts';
import type { Guard, RouteTable } from '../core/http/routes.ts';
import { setActor } from '../core/observability/scope.ts';
import { CONSOLE_CLIENT_ID, type ConsoleEnv, type ConsolePage, NOTICES, publicPath } from './env.ts';
import { e, layout } from './html.ts';
import { clientPages } from './pages/clients.ts';
import { deliveryLogPages } from './pages/delivery-log.ts';
import { directoryListPages } from './pages/directories.ts';
import { directoryPages } from './pages/directory.ts';
import { directoryAdminPages } from './pages/directory-admin.ts';
import { directoryEventPages } from './pages/directory-events.ts';
import { directoryGroupPages } from './pages/directory-groups.ts';
import { directoryUserPages } from './pages/directory-users.ts';
import { jobPages } from './pages/jobs.ts';
import { keyPages } from './pages/keys.ts';
import { overviewPages } from './pages/overview.ts';
import { sessionPages } from './pages/sessions.ts';
import { setupLinkPages } from './pages/setup-links.ts';
import { trustPages } from './pages/trust.ts';
import { webhookPages } from './pages/webhooks.ts';
import { type ConsoleSession, createCookieSealer, sameSecret } from './session.ts';
import { createSignIn } from './signin.ts';

/**
 * The pages, one module each, in the order their routes are registered (it is the order of the
 * route table in docs/security.md; the setup links come before the directory of `:id`, which would
 * match their path).
 */
const PAGES: readonly ConsolePage[] = [
  overviewPages,
  clientPages,
  keyPages,
  sessionPages,
  trustPages,
  directoryListPages,
  // Before directoryPages: /directories/new is not a directory id.
  directoryAdminPages,
  setupLinkPages,
  directoryPages,
  directoryUserPages,
  directoryGroupPages,
  directoryEventPages,
  deliveryLogPages,
  webhookPages,
  jobPages,
];

/**
 * Registers the console's pages on the admin listener's table (sign-in pages public, every other
 * page behind the `operator` guard) and returns that guard.
 * Long: the page environment, the sign-in routes and the guard share the cookie sealer and the
 * operator list, which the closure binds once; the pages themselves are in pages/.
 */
export function consoleRoutes(table: RouteTable, c: Container): { operator: Guard } {
  const cfg = c.config;
  const admin = new URL(cfg.urls.self.admin);
  const sealer = createCookieSealer(cfg.secrets.system, c.clock, admin.protocol === 'https:', c.db);
  const ttlSec = Math.max(60, Math.floor(cfg.console.session_ttl / 1000));
  const operators = new Set(cfg.console.operators);
  const isOperator = (sub: string) => operators.has(sub);

  const formTargets = (ctx: Context) => {
    const out = [cspSource(cfg.urls.self.admin), cspSource(listenerOrigin(ctx))].filter((x): x is string => !!x);
    return out;
  };

  const body = (ctx: Context) => (ctx.request.body ?? {}) as Record<string, unknown>;
  const env: ConsoleEnv = {
    c,
    page(ctx, title, html, o = {}) {
      const s = ctx.state.consoleSession as ConsoleSession | undefined;
      const doneKey = typeof ctx.query.done === 'string' ? ctx.query.done : '';
      sendHtml(
        ctx,
        (nonce) =>
          layout({
            nonce,
            title,
            body: html,
            operator: s && { subject: s.sub, csrf: s.csrf },
            path: publicPath(ctx),
            notice: o.notice ?? NOTICES[doneKey],
          }),
        { formAction: formTargets(ctx) },
        o.status ?? 200,
      );
    },
    session: (ctx) => ctx.state.consoleSession as ConsoleSession,
    field(ctx, name) {
      return firstValue(body(ctx)[name]) ?? '';
    },
    fields(ctx, name) {
      const v = body(ctx)[name];
      return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
    },
    csrf: (ctx) => env.session(ctx).csrf,
    param: (ctx, name) => String((ctx.params as Record<string, string>)[name] ?? ''),
  };

  /** An error page of the console (never a stack trace). */
  const problem = (ctx: Context, status: number, message: string) =>
    env.page(
      ctx,
      status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : 'Something went wrong',
      `<p class="error" role="alert">${e(message)}</p><p><a href="/console">Back to the console</a></p>`,
      { status },
    );

  const signIn = createSignIn({ c, sealer, clientId: CONSOLE_CLIENT_ID, ttlSec, isOperator, problem });

  // Errors of every console route become an HTML page (services throw AppError with a message for people).
  async function consoleErrors(ctx: Context, next: Next) {
    try {
      await next();
    } catch (err) {
      if (err instanceof AppError) {
        const status = err.status >= 400 ? Math.min(err.status, 500) : 500;
        const msg = [err.description || err.code, err.hint].filter(Boolean).join(' ');
        return problem(ctx, status, msg);
      }
      c.log.error({ err: { name: (err as Error)?.name, message: (err as Error)?.message } }, 'console page failed');
      problem(ctx, 500, 'The page could not be built; the server log has the details.');
    }
  }

  // The admin listener serves every route under `/admin` too (`/console` arrives as `/admin/console`).
  const group = { prefix: '/admin/console', body: ['form' as const], wrap: [consoleErrors], tag: 'console' };
  signIn.mount(table.group({ ...group, access: 'public' }));
  const r = table.group({ ...group, access: 'operator' });

  // Every other page: a valid session of a current operator, and the CSRF token on every POST.
  async function consoleGuard(ctx: Context, next: Next) {
    const s = await sealer.readSession(ctx);
    if (!s || !isOperator(s.sub)) {
      if (s) sealer.endSession(ctx);
      if (ctx.method === 'GET' || ctx.method === 'HEAD') {
        const back = publicPath(ctx) + (ctx.querystring ? `?${ctx.querystring}` : '');
        return ctx.redirect(`/console/login?return_to=${encodeURIComponent(back)}`);
      }
      return problem(ctx, 401, 'Your console session has ended; sign in again.');
    }
    ctx.state.consoleSession = s;
    // Audit events of the console's actions name the operator.
    setActor({ kind: 'operator', id: s.sub });
    if (ctx.method === 'POST' && !sameSecret(env.field(ctx, 'csrf'), s.csrf)) {
      return problem(ctx, 403, 'The form is invalid or expired (CSRF check failed); reload the page and try again.');
    }
    await next();
  }

  r.post('/logout', async function consoleLogout(ctx) {
    await sealer.endSession(ctx);
    ctx.status = 303;
    ctx.redirect('/console/signed-out');
  });

  // Ends every console session of the signed-in operator (other browsers, copied cookies).
  r.post('/logout-everywhere', async function consoleLogoutEverywhere(ctx) {
    const sub = env.session(ctx).sub;
    const n = await sealer.endAllSessions(ctx, sub);
    c.log.info({ operator: sub, sessions: n }, 'console: operator signed out everywhere');
    ctx.status = 303;
    ctx.redirect('/console/signed-out?everywhere=1');
  });

  for (const page of PAGES) page(env, r);

  return {
    operator: {
      description: 'A signed-in operator (`console.operators`), with the session’s CSRF token on every POST.',
      check: consoleGuard,
      readsBody: true,
    },
  };
}
