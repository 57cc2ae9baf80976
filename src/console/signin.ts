/**
 * The console as a relying party of this server: its OAuth 2.0 client (`gatehouse-console`,
 * confidential, secret derived from `secrets.system`, `skip_consent`, redirect URI
 * `<urls.self.admin>console/callback`) is created or brought up to date on the first sign-in of
 * each process. Sign-in is the authorization code flow with PKCE (RFC 7636, S256) against the
 * public listener; the callback checks `state`, exchanges the code at the token endpoint, verifies
 * the ID token (signature against the server's JWKS, `iss`, `aud`, `exp`, `nonce`) and admits only
 * subjects listed in `console.operators`.
 */
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { Context } from 'koa';
import type { Container } from '../container.ts';
import { AppError } from '../core/errors.ts';
import { sendHtml } from '../core/http/html.ts';
import type { Registrar } from '../core/http/routes.ts';
import { clientDraft } from '../oauth2/index.ts';
import { e, layout } from './html.ts';
import { type CookieSealer, randomToken, sameSecret } from './session.ts';

const SIGNIN_TTL_SEC = 600;

export interface SignInDeps {
  c: Container;
  sealer: CookieSealer;
  clientId: string;
  ttlSec: number;
  isOperator(sub: string): boolean;
  problem(ctx: Context, status: number, message: string): void;
}

/** A return path inside the console, or the console's start page. */
const safeReturn = (v: unknown) =>
  typeof v === 'string' && /^\/console(\/[^\\]*)?(\?.*)?$/.test(v) && !v.startsWith('//') ? v : '/console';

/**
 * The console's sign-in: its client, the code exchange and the routes of the flow.
 * Long: the client's settings, the JWKS and the sealed sign-in state are shared by the routes and
 * are made once per mount.
 */
export function createSignIn(d: SignInDeps) {
  const { c, sealer, clientId } = d;
  const cfg = c.config;
  const redirectUri = new URL('console/callback', cfg.urls.self.admin).toString();
  const publicBase = cfg.urls.self.public;
  const jwks = createRemoteJWKSet(new URL('.well-known/jwks.json', publicBase), { timeoutDuration: 10_000 });

  let ensured: Promise<void> | undefined;
  /** Creates the console's client, or brings its settings and secret up to date (once per process). */
  function ensureClient(): Promise<void> {
    ensured ??= (async () => {
      const draft = clientDraft({
        client_id: clientId,
        client_name: 'gatehouse console',
        client_secret: sealer.clientSecret(),
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        scope: 'openid',
        token_endpoint_auth_method: 'client_secret_basic',
        skip_consent: true,
        metadata: { managed_by: 'gatehouse console' },
      });
      // Already as wanted (the usual case after the first start): no write, no audit event.
      const stored = await c.oauth2.clients.findStored(clientId);
      if (
        stored &&
        stored.client.redirect_uris?.length === 1 &&
        stored.client.redirect_uris[0] === redirectUri &&
        stored.client.skip_consent &&
        stored.client.scope === 'openid' &&
        (await c.oauth2.clients.verifyStoredSecret(stored, sealer.clientSecret()))
      ) {
        return;
      }
      try {
        await c.oauth2.clients.get(clientId);
        await c.oauth2.clients.replace(clientId, draft);
      } catch (err) {
        if (!(err instanceof AppError) || err.status !== 404) throw err;
        try {
          await c.oauth2.clients.create(draft, { dynamic: false });
        } catch (e2) {
          // Another process created it at the same moment: bring it up to date instead.
          if (!(e2 instanceof AppError) || e2.status !== 409) throw e2;
          await c.oauth2.clients.replace(clientId, draft);
        }
      }
    })().catch((err) => {
      ensured = undefined;
      throw err;
    });
    return ensured;
  }

  async function exchange(code: string, verifier: string): Promise<Record<string, unknown>> {
    const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(sealer.clientSecret())}`).toString(
      'base64',
    );
    let res: Response;
    try {
      res = await fetch(new URL('oauth2/token', publicBase), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: redirectUri,
          code_verifier: verifier,
        }),
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      });
    } catch {
      throw new AppError({
        status: 502,
        code: 'Bad Gateway',
        description: 'The token endpoint (urls.self.public) could not be reached.',
      });
    }
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (res.status !== 200) {
      const why = typeof body.error === 'string' ? body.error : `status ${res.status}`;
      throw new AppError({
        status: 502,
        code: 'Bad Gateway',
        description: `The token endpoint refused the code (${why}).`,
      });
    }
    return body;
  }

  function mount(r: Registrar) {
    r.get('/login', async function consoleLogin(ctx) {
      await ensureClient();
      const state = randomToken();
      const nonce = randomToken();
      const verifier = randomToken();
      await sealer.startSignIn(
        ctx,
        { state, nonce, verifier, returnTo: safeReturn(ctx.query.return_to) },
        SIGNIN_TTL_SEC,
      );
      const u = new URL('oauth2/auth', publicBase);
      u.search = new URLSearchParams({
        client_id: clientId,
        response_type: 'code',
        redirect_uri: redirectUri,
        scope: 'openid',
        state,
        nonce,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      }).toString();
      ctx.redirect(u.toString());
    });

    r.get('/callback', async function consoleCallback(ctx) {
      const q = (k: string) => (typeof ctx.query[k] === 'string' ? (ctx.query[k] as string) : '');
      const pending = await sealer.takeSignIn(ctx);
      if (!pending || !sameSecret(q('state'), pending.state)) {
        return d.problem(ctx, 400, 'This sign-in is unknown or expired (state mismatch); sign in again.');
      }
      if (q('error')) {
        return d.problem(ctx, 403, `The sign-in was not completed: ${q('error_description') || q('error')}.`);
      }
      if (!q('code')) return d.problem(ctx, 400, 'The callback carries no authorization code.');
      const tokens = await exchange(q('code'), pending.verifier);
      if (typeof tokens.id_token !== 'string') {
        return d.problem(ctx, 502, 'The token endpoint returned no ID token.');
      }
      let sub: string;
      try {
        const { payload } = await jwtVerify(tokens.id_token, jwks, {
          issuer: cfg.urls.self.issuer,
          audience: clientId,
          currentDate: c.clock.now(),
          clockTolerance: 5,
        });
        if (typeof payload.nonce !== 'string' || !sameSecret(payload.nonce, pending.nonce)) {
          return d.problem(ctx, 400, 'The ID token does not belong to this sign-in (nonce mismatch).');
        }
        sub = String(payload.sub ?? '');
      } catch {
        return d.problem(ctx, 502, 'The ID token could not be verified.');
      }
      if (!sub || !d.isOperator(sub)) {
        return d.problem(
          ctx,
          403,
          `You are signed in as ${sub || 'an unknown subject'}, which is not a console operator (console.operators).`,
        );
      }
      await sealer.startSession(ctx, sub, d.ttlSec);
      c.log.info({ operator: sub }, 'console: operator signed in');
      ctx.redirect(pending.returnTo);
    });

    r.get('/signed-out', function consoleSignedOut(ctx) {
      const everywhere = ctx.query.everywhere === '1';
      const status = everywhere
        ? 'You are signed out of the console in every browser: all your console sessions have ended.'
        : 'You are signed out of the console.';
      sendHtml(ctx, (nonce) =>
        layout({
          nonce,
          title: 'Signed out',
          body: `<p role="status">${status}</p>
<p>Your sign-in session at this server may still be active; it ends when you sign out of the server or when it expires.</p>
<p><a href="/console/login">Sign in again</a></p>`,
        }),
      );
    });
  }

  return { mount, ensureClient, redirectUri, e };
}
