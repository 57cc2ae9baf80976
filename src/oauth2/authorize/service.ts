/**
 * `/oauth2/auth`: validate, then one of three steps depending on the verifier present — start the
 * login, continue to consent, or finish. Every AppError becomes a redirect (to the client when its
 * redirect URI is trusted, else to `urls.error`); only unexpected failures escape as 500s.
 */
import { AppError } from '../../core/errors.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { finishConsent } from './consent-step.ts';
import type { AuthorizeDeps, CookieJar } from './deps.ts';
import { afterLogin, startLogin } from './login-step.ts';
import { validateAuthorizeRequest } from './pipeline.ts';
import type { PushedRequests } from './pushed.ts';
import type { ErrorTarget } from './request.ts';
import { type AuthorizeOutcome, errorOutcome } from './respond.ts';

const INTERNAL = new Set(['login_verifier', 'consent_verifier']);

export function createAuthorizeService(d: AuthorizeDeps, pushed: PushedRequests) {
  const parRequired = d.config.oauth2.pushed_authorization_requests.required;
  /** The authorization URL the login and consent UIs see as `request_url` (verifiers removed). */
  function requestUrl(params: Record<string, string>): string {
    const u = new URL('oauth2/auth', d.config.urls.self.public);
    for (const [k, v] of Object.entries(params)) if (!INTERNAL.has(k)) u.searchParams.append(k, v);
    return u.toString();
  }

  return {
    async authorize(params: Record<string, string>, jar: CookieJar): Promise<AuthorizeOutcome> {
      const target: ErrorTarget = { responseMode: 'query', state: '' };
      try {
        // A pushed request's parameters replace the browser's (RFC 9126 §4); `requestUrl` below
        // keeps the browser's (`client_id` and `request_uri`), so they never show in it.
        const fromPush = await pushed.resolve(params);
        const ar = await validateAuthorizeRequest(
          { config: d.config, outbound: d.outbound, clients: d.clients, now: () => d.clock.now() },
          fromPush ?? params,
          target,
        );
        if (!fromPush && (parRequired || ar.client.requirePushedAuthorizationRequests)) {
          throw oauth2Error('invalid_request', {
            hint: 'This authorization request must be pushed first (POST /oauth2/par, RFC 9126).',
          });
        }
        const loginVerifier = (params.login_verifier ?? '').trim();
        const consentVerifier = (params.consent_verifier ?? '').trim();
        if (!loginVerifier && !consentVerifier) return await startLogin(d, ar, jar, requestUrl(params));
        if (loginVerifier) return await afterLogin(d, ar, jar, loginVerifier);
        return await finishConsent(d, ar, jar, consentVerifier);
      } catch (e) {
        if (!(e instanceof AppError)) throw e;
        return errorOutcome(e, target, {
          issuer: d.config.urls.self.issuer,
          errorUrl: d.config.urls.error,
          exposeDebug: d.config.oauth2.expose_internal_errors,
        });
      }
    },
  };
}

export type AuthorizeService = ReturnType<typeof createAuthorizeService>;
