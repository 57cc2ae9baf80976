/**
 * The development login, consent, logout and device verification app (`dev_ui.enabled`): server-rendered pages under
 * `/dev/` on the public listener. It follows an ordinary login and consent app
 * (https://www.ory.sh/docs/hydra/guides/custom-ui-oauth2): it reads a challenge, then accepts or
 * rejects it. It does so in-process, through the services behind the admin API's `flows` routes,
 * with the same request bodies and checks, not over HTTP: so it needs no admin API credential
 * while `serve.admin.auth` is on, and no reachable admin listener, and the admin API's guard stays
 * as it is. It is the server's own login provider, as the console is its own operator UI; its
 * users authenticate to it with `dev_ui.users` (passwords compared in constant time).
 * Every form carries a token signed with a per-process key and bound to the challenge; every page
 * goes through `sendHtml` (nonce CSP, nosniff, no-referrer, no framing) and escapes every value.
 */

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import type { z } from 'zod';
import { secretKey } from '../core/crypto/keys.ts';
import { AppError } from '../core/errors.ts';
import { hydraBody } from '../core/http/errors.ts';
import { cspSource, escapeHtml as e, sendHtml } from '../core/http/html.ts';
import { firstValue } from '../core/http/params.ts';
import type { RouteTable } from '../core/http/routes.ts';
import type { DevUser } from './config.ts';
import type { OAuth2Config } from './deps.ts';
import type { DeviceService } from './device/service.ts';
import { acceptConsentBody, acceptLoginBody, rejectBody } from './flows/schemas.ts';
import type { FlowsService } from './flows/service.ts';
import { parseOr400 } from './guard.ts';
import type { LogoutService } from './logout/service.ts';

type Kind = 'login' | 'consent' | 'logout' | 'device';

/** What an operation answered, as the admin API would: its status and JSON body. */
interface Answer {
  status: number;
  body: Record<string, unknown>;
}

const CHALLENGE = {
  login: 'login_challenge',
  consent: 'consent_challenge',
  logout: 'logout_challenge',
  device: 'device_challenge',
} as const;

/** Constant-time equality of two strings of any length (compares their SHA-256 digests). */
function sameSecret(a: string, b: string): boolean {
  const h = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(h(a), h(b));
}

/** The user with this subject and password, or undefined; every user is compared, in constant time. */
export function findUser(users: readonly DevUser[], subject: string, password: string): DevUser | undefined {
  let found: DevUser | undefined;
  for (const u of users) {
    const ok = sameSecret(u.subject, subject) && sameSecret(u.password, password);
    if (ok && !found) found = u;
  }
  return found;
}

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a;background:#fff}
h1{font-size:1.5rem}
fieldset{border:1px solid #888;border-radius:4px;margin:1rem 0;padding:.5rem 1rem}
label{display:block;margin:.5rem 0}
input[type=text],input[type=password]{display:block;width:100%;box-sizing:border-box;padding:.4rem;font:inherit;border:1px solid #555;border-radius:3px}
button{font:inherit;padding:.4rem 1rem;margin-right:.5rem;border:1px solid #1a4f8b;border-radius:3px;background:#1a4f8b;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#1a4f8b}
:focus-visible{outline:3px solid #c25e00;outline-offset:2px}
.error{color:#a00000;font-weight:bold}
.note{color:#444;font-size:.9rem}
code{background:#f0f0f0;padding:0 .2rem}
`;

function layout(nonce: string, title: string, main: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)} · gatehouse development</title>
<style nonce="${e(nonce)}">${STYLE}</style>
</head>
<body>
<main>
<h1>${e(title)}</h1>
${main}
<p class="note">gatehouse development login app: test users only; never enable it in production.</p>
</main>
</body>
</html>
`;
}

/** A JSON object's members, or none when the value is not an object. */
const members = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};

const clientLabel = (client: unknown) => {
  const c = members(client);
  const name = typeof c.client_name === 'string' && c.client_name ? c.client_name : '';
  const id = typeof c.client_id === 'string' ? c.client_id : '';
  return name ? `${e(name)} (<code>${e(id)}</code>)` : `<code>${e(id)}</code>`;
};

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === 'string') : []);

/**
 * The operations the pages call, in-process: the services behind the admin API's login, consent,
 * logout and device routes (`flows` family), and the client as `GET /admin/clients/{id}` renders it.
 */
export interface DevUiServices {
  flows: Pick<
    FlowsService,
    'getLoginRequest' | 'acceptLogin' | 'rejectLogin' | 'getConsentRequest' | 'acceptConsent' | 'rejectConsent'
  >;
  logout: Pick<LogoutService, 'getLogoutRequest' | 'acceptLogoutRequest' | 'rejectLogoutRequest'>;
  device: Pick<DeviceService, 'acceptUserCode'>;
  /** The client as the admin API renders it; undefined when there is none. */
  client(id: string): Promise<Record<string, unknown> | undefined>;
}

export interface DevUiOptions {
  config: OAuth2Config;
  services: DevUiServices;
}

/**
 * Runs one operation and answers as the admin API would: 200 with its result, 410 for a consent
 * request already handled, or the status and `{error, error_description}` of the AppError it threw.
 * Anything else (the database down) is no answer of the operation: it propagates to the app.
 */
async function run(op: () => Promise<unknown>): Promise<Answer> {
  try {
    const body = members(await op());
    return body.gone === true ? { status: 410, body: { redirect_to: body.redirect_to } } : { status: 200, body };
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, body: hydraBody(err, false) };
    throw err;
  }
}

/**
 * The development pages under `/dev` on the public listener: public, with CSRF tokens bound to each challenge.
 * Long: the login, consent, logout and device pages share one CSRF key, the operations on the
 * challenges and one layout; each page is a few routes over them.
 */
export function devUiRoutes(table: RouteTable, o: DevUiOptions): void {
  const cfg = o.config;
  const s = o.services;
  const users = cfg.dev_ui.users ?? [];
  const key = randomBytes(32);
  const publicOrigin = cspSource(cfg.urls.self.public);
  const rememberFor = Math.floor(cfg.ttl.authentication_session / 1000);

  const csrf = (kind: Kind, challenge: string) =>
    createHmac('sha256', secretKey(key)).update(`${kind}\0${challenge}`).digest('base64url');
  const csrfOk = (kind: Kind, challenge: string, token: string) => sameSecret(csrf(kind, challenge), token);

  // The operations of the admin API's flow routes, with the bodies checked by the same schemas.
  const op = {
    getLogin: (challenge: string) => run(() => s.flows.getLoginRequest(challenge)),
    acceptLogin: (challenge: string, body: z.input<typeof acceptLoginBody>) =>
      run(() => s.flows.acceptLogin(challenge, parseOr400(acceptLoginBody, body))),
    rejectLogin: (challenge: string, body: z.input<typeof rejectBody>) =>
      run(() => s.flows.rejectLogin(challenge, parseOr400(rejectBody, body))),
    getConsent: (challenge: string) => run(() => s.flows.getConsentRequest(challenge)),
    acceptConsent: (challenge: string, body: z.input<typeof acceptConsentBody>) =>
      run(() => s.flows.acceptConsent(challenge, parseOr400(acceptConsentBody, body))),
    rejectConsent: (challenge: string, body: z.input<typeof rejectBody>) =>
      run(() => s.flows.rejectConsent(challenge, parseOr400(rejectBody, body))),
    getLogout: (challenge: string) => run(() => s.logout.getLogoutRequest(challenge)),
    acceptLogout: (challenge: string) => run(() => s.logout.acceptLogoutRequest(challenge)),
    rejectLogout: (challenge: string) => run(() => s.logout.rejectLogoutRequest(challenge)),
    acceptDevice: (challenge: string, userCode: string) => run(() => s.device.acceptUserCode(challenge, userCode)),
  };

  /** Form targets: this origin and the client's redirect URIs (browsers check form-action along redirects). */
  const formTargets = (client: unknown) => {
    const out = publicOrigin ? [publicOrigin] : [];
    const c = members(client);
    for (const u of [...strings(c.redirect_uris), ...strings(c.post_logout_redirect_uris)]) {
      const s = cspSource(u);
      if (s) out.push(s);
    }
    const pl = cspSource(cfg.urls.post_logout_redirect);
    if (pl) out.push(pl);
    return out;
  };

  function problem(ctx: Context, status: number, message: string) {
    sendHtml(
      ctx,
      (n) => layout(n, 'Something went wrong', `<p class="error" role="alert">${e(message)}</p>`),
      {},
      status,
    );
  }

  /** An answer that is not a success: the error page (the operation's error, escaped). */
  function answerProblem(ctx: Context, a: Answer) {
    const desc = [a.body.error, a.body.error_description].filter((x) => typeof x === 'string').join(': ');
    const status = a.status >= 400 && a.status < 500 ? a.status : 502;
    problem(ctx, status, desc || `The request could not be answered (${a.status}).`);
  }

  function redirectTo(ctx: Context, a: Answer) {
    if (a.status !== 200 || typeof a.body.redirect_to !== 'string') return answerProblem(ctx, a);
    ctx.redirect(a.body.redirect_to);
  }

  const challengeOf = (ctx: Context, kind: Kind) => {
    const fromQuery = firstValue(ctx.query[CHALLENGE[kind]]);
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    return fromQuery ?? firstValue(body.challenge) ?? '';
  };
  const field = (ctx: Context, name: string) => {
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    return firstValue(body[name]) ?? '';
  };
  const fieldList = (ctx: Context, name: string) => {
    const v = ((ctx.request.body ?? {}) as Record<string, unknown>)[name];
    return Array.isArray(v) ? v.filter((x) => typeof x === 'string') : typeof v === 'string' ? [v] : [];
  };

  function loginPage(ctx: Context, req: Record<string, unknown>, challenge: string, error?: string, subject = '') {
    const main = `<p>${clientLabel(req.client)} asks you to sign in.</p>
${error ? `<p class="error" role="alert" id="login-error">${e(error)}</p>` : ''}
<form method="post" action="/dev/login">
<input type="hidden" name="challenge" value="${e(challenge)}">
<input type="hidden" name="csrf" value="${e(csrf('login', challenge))}">
<label for="subject">User (subject)</label>
<input type="text" id="subject" name="subject" autocomplete="username" required value="${e(subject)}"${error ? ' aria-describedby="login-error"' : ''}>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<label><input type="checkbox" name="remember" value="1"> Remember me on this browser</label>
<button type="submit" name="action" value="accept">Sign in</button>
<button type="submit" name="action" value="deny" class="secondary" formnovalidate>Cancel</button>
</form>
<p class="note">Test users: ${users.map((u) => `<code>${e(u.subject)}</code>`).join(', ') || 'none configured'}.</p>`;
    sendHtml(ctx, (n) => layout(n, 'Sign in', main), { formAction: formTargets(req.client) }, error ? 401 : 200);
  }

  const r = table.group({ prefix: '/dev', access: 'public', body: ['form'], tag: 'dev' });

  r.get('/login', async function devLogin(ctx) {
    const challenge = challengeOf(ctx, 'login');
    if (!challenge) return problem(ctx, 400, 'The login_challenge query parameter is missing.');
    const req = await op.getLogin(challenge);
    if (req.status !== 200) return answerProblem(ctx, req);
    if (req.body.skip === true) {
      return redirectTo(ctx, await op.acceptLogin(challenge, { subject: String(req.body.subject ?? '') }));
    }
    loginPage(ctx, req.body, challenge);
  });

  r.post('/login', async function devLoginSubmit(ctx) {
    const challenge = challengeOf(ctx, 'login');
    if (!challenge || !csrfOk('login', challenge, field(ctx, 'csrf'))) {
      return problem(ctx, 403, 'The form is invalid or expired; start the sign-in again.');
    }
    if (field(ctx, 'action') === 'deny') {
      return redirectTo(
        ctx,
        await op.rejectLogin(challenge, {
          error: 'access_denied',
          error_description: 'The resource owner denied the request',
        }),
      );
    }
    const user = findUser(users, field(ctx, 'subject'), field(ctx, 'password'));
    if (!user) {
      const req = await op.getLogin(challenge);
      if (req.status !== 200) return answerProblem(ctx, req);
      return loginPage(ctx, req.body, challenge, 'Unknown user or wrong password.', field(ctx, 'subject'));
    }
    const remember = field(ctx, 'remember') === '1';
    redirectTo(
      ctx,
      await op.acceptLogin(challenge, {
        subject: user.subject,
        remember,
        ...(remember ? { remember_for: rememberFor } : {}),
      }),
    );
  });

  const claimsOf = (subject: string) => users.find((u) => u.subject === subject)?.claims ?? {};
  const acceptConsent = (challenge: string, req: Record<string, unknown>, scopes: string[], remember: boolean) =>
    op.acceptConsent(challenge, {
      grant_scope: scopes,
      grant_access_token_audience: strings(req.requested_access_token_audience),
      remember,
      ...(remember ? { remember_for: rememberFor } : {}),
      session: { id_token: claimsOf(String(req.subject ?? '')) },
    });

  r.get('/consent', async function devConsent(ctx) {
    const challenge = challengeOf(ctx, 'consent');
    if (!challenge) return problem(ctx, 400, 'The consent_challenge query parameter is missing.');
    const a = await op.getConsent(challenge);
    if (a.status !== 200) return answerProblem(ctx, a);
    const req = a.body;
    if (req.skip === true) {
      return redirectTo(ctx, await acceptConsent(challenge, req, strings(req.requested_scope), false));
    }
    const scopes = strings(req.requested_scope);
    const audiences = strings(req.requested_access_token_audience);
    const main = `<p>${clientLabel(req.client)} asks for access on behalf of <strong>${e(String(req.subject ?? ''))}</strong>.</p>
<form method="post" action="/dev/consent">
<input type="hidden" name="challenge" value="${e(challenge)}">
<input type="hidden" name="csrf" value="${e(csrf('consent', challenge))}">
<fieldset>
<legend>Scopes to grant</legend>
${scopes.length ? scopes.map((s, i) => `<label for="scope-${i}"><input type="checkbox" id="scope-${i}" name="grant_scope" value="${e(s)}" checked> <code>${e(s)}</code></label>`).join('\n') : '<p>No scopes requested.</p>'}
</fieldset>
<fieldset>
<legend>Audiences</legend>
${audiences.length ? `<ul>${audiences.map((x) => `<li><code>${e(x)}</code></li>`).join('')}</ul>` : '<p>No audiences requested.</p>'}
</fieldset>
<label><input type="checkbox" name="remember" value="1"> Remember this decision</label>
<button type="submit" name="action" value="accept">Allow</button>
<button type="submit" name="action" value="deny" class="secondary">Deny</button>
</form>`;
    sendHtml(ctx, (n) => layout(n, 'Grant access', main), { formAction: formTargets(req.client) });
  });

  r.post('/consent', async function devConsentSubmit(ctx) {
    const challenge = challengeOf(ctx, 'consent');
    if (!challenge || !csrfOk('consent', challenge, field(ctx, 'csrf'))) {
      return problem(ctx, 403, 'The form is invalid or expired; start the sign-in again.');
    }
    if (field(ctx, 'action') === 'deny') {
      return redirectTo(
        ctx,
        await op.rejectConsent(challenge, {
          error: 'access_denied',
          error_description: 'The resource owner denied the request',
        }),
      );
    }
    const a = await op.getConsent(challenge);
    if (a.status !== 200) return answerProblem(ctx, a);
    const requested = strings(a.body.requested_scope);
    // Only scopes that were requested can be granted, whatever the form says.
    const ticked = new Set(fieldList(ctx, 'grant_scope'));
    const granted = requested.filter((s) => ticked.has(s));
    redirectTo(ctx, await acceptConsent(challenge, a.body, granted, field(ctx, 'remember') === '1'));
  });

  r.get('/logout', async function devLogout(ctx) {
    const challenge = challengeOf(ctx, 'logout');
    if (!challenge) return problem(ctx, 400, 'The logout_challenge query parameter is missing.');
    const a = await op.getLogout(challenge);
    if (a.status !== 200) return answerProblem(ctx, a);
    const main = `<p>Do you want to sign out${a.body.subject ? ` <strong>${e(String(a.body.subject))}</strong>` : ''}${a.body.client ? ` (requested by ${clientLabel(a.body.client)})` : ''}?</p>
<form method="post" action="/dev/logout">
<input type="hidden" name="challenge" value="${e(challenge)}">
<input type="hidden" name="csrf" value="${e(csrf('logout', challenge))}">
<button type="submit" name="action" value="accept">Sign out</button>
<button type="submit" name="action" value="deny" class="secondary">Stay signed in</button>
</form>`;
    sendHtml(ctx, (n) => layout(n, 'Sign out', main), { formAction: formTargets(a.body.client) });
  });

  r.post('/logout', async function devLogoutSubmit(ctx) {
    const challenge = challengeOf(ctx, 'logout');
    if (!challenge || !csrfOk('logout', challenge, field(ctx, 'csrf'))) {
      return problem(ctx, 403, 'The form is invalid or expired; start the sign-out again.');
    }
    if (field(ctx, 'action') === 'deny') {
      const a = await op.rejectLogout(challenge);
      if (a.status >= 300) return answerProblem(ctx, a);
      return sendHtml(ctx, (n) => layout(n, 'Still signed in', '<p>You are still signed in.</p>'));
    }
    redirectTo(ctx, await op.acceptLogout(challenge));
  });

  /** The client named by `client_id` (if any, and if there is one), for the device page. */
  async function knownClient(ctx: Context): Promise<Record<string, unknown> | undefined> {
    const id = firstValue(ctx.query.client_id) ?? field(ctx, 'client_id');
    if (!id) return undefined;
    const a = await run(() => s.client(id));
    return a.status === 200 && Object.keys(a.body).length ? a.body : undefined;
  }

  /** The user-code form of the device flow (RFC 8628 section 3.3), optionally with an error. */
  function devicePage(
    ctx: Context,
    challenge: string,
    client: Record<string, unknown> | undefined,
    userCode: string,
    error?: { status: number; message: string },
  ) {
    const main = `<p>${client ? `${clientLabel(client)} asks to be connected to your account.` : 'A device asks to be connected to your account.'} Enter the code the device shows.</p>
${error ? `<p class="error" role="alert" id="device-error">${e(error.message)}</p>` : ''}
<form method="post" action="/dev/device">
<input type="hidden" name="challenge" value="${e(challenge)}">
<input type="hidden" name="csrf" value="${e(csrf('device', challenge))}">
${client && typeof client.client_id === 'string' ? `<input type="hidden" name="client_id" value="${e(client.client_id)}">` : ''}
<label for="user_code">Code shown on the device</label>
<input type="text" id="user_code" name="user_code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required value="${e(userCode)}"${error ? ' aria-describedby="device-error" aria-invalid="true"' : ''}>
<button type="submit">Continue</button>
</form>`;
    sendHtml(
      ctx,
      (n) => layout(n, 'Connect a device', main),
      { formAction: formTargets(client) },
      error?.status ?? 200,
    );
  }

  r.get('/device', async function devDevice(ctx) {
    const challenge = challengeOf(ctx, 'device');
    if (!challenge) return problem(ctx, 400, 'The device_challenge query parameter is missing.');
    devicePage(ctx, challenge, await knownClient(ctx), firstValue(ctx.query.user_code) ?? '');
  });

  r.post('/device', async function devDeviceSubmit(ctx) {
    const challenge = challengeOf(ctx, 'device');
    if (!challenge || !csrfOk('device', challenge, field(ctx, 'csrf'))) {
      return problem(ctx, 403, 'The form is invalid or expired; start the device verification again.');
    }
    const userCode = field(ctx, 'user_code').trim();
    const client = await knownClient(ctx);
    if (!userCode) {
      return devicePage(ctx, challenge, client, '', { status: 400, message: 'Enter the code shown on the device.' });
    }
    const a = await op.acceptDevice(challenge, userCode);
    if (a.status === 200 && typeof a.body.redirect_to === 'string') return ctx.redirect(a.body.redirect_to);
    if (a.status === 429) {
      return devicePage(ctx, challenge, client, '', {
        status: 429,
        message: 'Too many wrong codes. Start again on the device to get a new code.',
      });
    }
    if (a.status === 400) {
      return devicePage(ctx, challenge, client, userCode, {
        status: 400,
        message: 'This code is wrong or has expired. Check the code on the device and try again.',
      });
    }
    answerProblem(ctx, a);
  });

  r.get('/device/done', async function devDeviceDone(ctx) {
    const client = await knownClient(ctx);
    const main = `<p role="status">You successfully authenticated on your device${client ? ` (${clientLabel(client)})` : ''}. You can close this page and return to the device.</p>`;
    sendHtml(ctx, (n) => layout(n, 'Device connected', main));
  });
}
