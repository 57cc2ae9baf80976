/**
 * Hydra's token hook (`oauth2.token_hook`): before the token endpoint issues
 * tokens — authorization_code, refresh_token, client_credentials and jwt-bearer — it POSTs
 * `{session: {access_token, id_token}, request: {client_id, requested_scopes, granted_scopes,
 * granted_audience, grant_types, payload}}` through the guarded outbound client.
 * - 200 `{session: {access_token, id_token}}`: those replace the custom claims of the tokens being
 *   issued (the access token's `ext` and the ID token's extra claims) and of the grant session
 *   stored with them, so introspection and later refreshes see them too;
 * - 204: no change; 403: `access_denied`;
 * - any other status, an unreadable 200 body, a timeout, a network error or a refused address:
 *   `server_error` (500). Messages name no address (the outbound client's errors never do).
 * `payload` carries only the `assertion` of a jwt-bearer request (Hydra sanitizes the form to it):
 * never a code, refresh token or client secret.
 */
import type { HookConfig } from '../../core/config/schema.ts';
import type { Logger } from '../../core/log.ts';
import { type SafeFetch, SafeFetchError } from '../../core/safe-fetch.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { type Grant, type GrantKind, JWT_BEARER_GRANT } from './grant.ts';

export interface TokenHookDeps {
  hook: HookConfig | undefined;
  fetch: SafeFetch;
  log: Logger;
}

/** Form values the hook may see, by grant (Hydra: `Sanitize(["assertion"])`). */
export type HookPayload = Record<string, string[]>;

/** Runs the hook for a grant about to be issued; resolves to the grant to issue (claims replaced or not). */
export type TokenHook = (grant: Grant, kind: GrantKind, payload?: HookPayload) => Promise<Grant>;

const GRANT_TYPE: Partial<Record<GrantKind, string>> = {
  authorization_code: 'authorization_code',
  refresh_token: 'refresh_token',
  client_credentials: 'client_credentials',
  jwt_bearer: JWT_BEARER_GRANT,
  device_authorization: 'urn:ietf:params:oauth:grant-type:device_code',
  token_exchange: 'urn:ietf:params:oauth:grant-type:token-exchange',
};

const HINT = 'The token hook target responded with an error.';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The hook's request body. */
export function hookRequestBody(grant: Grant, grantType: string, payload: HookPayload) {
  return {
    session: { access_token: grant.session.ext, id_token: grant.session.idToken.extra },
    request: {
      client_id: grant.client.id,
      requested_scopes: grant.requestedScope,
      granted_scopes: grant.grantedScope,
      granted_audience: grant.grantedAudience,
      grant_types: [grantType],
      payload,
    },
  };
}

function authHeaders(hook: HookConfig): Record<string, string> {
  const a = hook.auth?.config;
  if (!a) return {};
  return a.in === 'header' ? { [a.name]: a.value } : { cookie: `${a.name}=${a.value}` };
}

/** The hook, or a pass-through when `oauth2.token_hook` is empty. */
export function createTokenHook(d: TokenHookDeps): TokenHook {
  const hook = d.hook;
  if (!hook) return async (grant) => grant;
  return async (grant, kind, payload = {}) => {
    const grantType = GRANT_TYPE[kind];
    if (!grantType) return grant;
    let res: Awaited<ReturnType<SafeFetch>>;
    try {
      res = await d.fetch(hook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json; charset=UTF-8',
          accept: 'application/json',
          ...authHeaders(hook),
        },
        body: JSON.stringify(hookRequestBody(grant, grantType, payload)),
        redirect: 'manual',
      });
    } catch (e) {
      if (!(e instanceof SafeFetchError)) throw e;
      d.log.warn({ code: e.code, host: e.host }, 'token hook request failed');
      throw oauth2Error('server_error', {
        hint: 'An error occurred while executing the token hook.',
        debug: `Unable to perform the HTTP request: ${e.message}`,
      });
    }
    if (res.status === 204) return grant;
    if (res.status === 403) {
      throw oauth2Error('access_denied', {
        hint: HINT,
        debug: `Token hook responded with HTTP status code: ${res.status}`,
      });
    }
    if (res.status !== 200) {
      d.log.warn({ status: res.status }, 'token hook answered with an error status');
      throw oauth2Error('server_error', {
        hint: HINT,
        debug: `Token hook responded with HTTP status code: ${res.status}`,
      });
    }
    let body: unknown;
    try {
      body = JSON.parse(res.text());
    } catch {
      body = undefined;
    }
    if (!isObject(body) || (body.session !== undefined && !isObject(body.session))) {
      throw oauth2Error('server_error', { hint: HINT, debug: 'Response from token hook could not be decoded.' });
    }
    const session = (body.session ?? {}) as Record<string, unknown>;
    // As Hydra: the answer overwrites both claim sets (a missing one empties it).
    const ext = isObject(session.access_token) ? session.access_token : {};
    const extra = isObject(session.id_token) ? session.id_token : {};
    return { ...grant, session: { ...grant.session, ext, idToken: { ...grant.session.idToken, extra } } };
  };
}
