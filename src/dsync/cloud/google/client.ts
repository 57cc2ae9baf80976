/**
 * Google's OAuth token endpoint and Admin SDK Directory API
 * (https://developers.google.com/admin-sdk/directory), through the
 * guarded outbound client. Token requests authenticate the client with `client_secret_post`; list
 * calls ask for `maxResults=200` and follow `nextPageToken`. Short transient failures (network,
 * timeouts, 429, 5xx) are retried a few times within the call; everything else becomes a
 * `google_*` AppError whose message names the cause but never a token, a code or an address.
 */
import pRetry, { AbortError } from 'p-retry';
import { AppError, isAppError } from '../../../core/errors.ts';
import { type SafeFetch, SafeFetchError, type SafeResponse } from '../../../core/safe-fetch.ts';
import { apiErrorBody, type ListKind, listResponse, tokenErrorBody, tokenResponse } from './schemas.ts';

export const PAGE_SIZE = 200;

export type GoogleErrorKind =
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'invalid_grant'
  | 'invalid_client'
  | 'unavailable'
  | 'bad_response'
  | 'not_configured';

/**
 * A failure talking to Google: 502, except `invalid_grant` (a rejected code or refresh token: the
 * caller's, 400) and `not_configured` (no client id or secret: the operator's, 500).
 */
export const googleError = (kind: GoogleErrorKind, message: string) =>
  new AppError({
    status: kind === 'invalid_grant' ? 400 : kind === 'not_configured' ? 500 : 502,
    code: `google_${kind}`,
    description: message,
    family: 'dsync',
  });

export const isGoogleError = (e: unknown, kind?: GoogleErrorKind): e is AppError =>
  isAppError(e) && e.code.startsWith('google_') && (kind === undefined || e.code === `google_${kind}`);

export interface GoogleClientOptions {
  fetch: SafeFetch;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  tokenUrl: string;
  apiUrl: string;
  /** Attempts of one call on transient failures (default 3). */
  attempts?: number;
}

export interface TokenSet {
  accessToken: string;
  refreshToken: string | undefined;
  scope: string;
  tokenType: string;
  /** seconds */
  expiresIn: number | undefined;
  idToken: string | undefined;
}

export interface ListPage {
  items: Array<Record<string, unknown> & { id: string }>;
  nextPageToken: string | undefined;
}

/** A short code Google put in an error body (`invalid_grant`, `PERMISSION_DENIED`), never free text. */
const shortCode = (v: unknown) => (typeof v === 'string' && /^[A-Za-z_]{1,64}$/.test(v) ? v : undefined);

/** The answer's JSON body, undefined when it is not JSON. */
function bodyJson(res: SafeResponse): unknown {
  try {
    return res.json();
  } catch {
    return undefined;
  }
}

/**
 * Google's token endpoint and Directory API, through the domain's guarded client, with retries.
 * Long: the token and list calls share one retry loop and one way of reading Google's errors.
 */
export function createGoogleClient(o: GoogleClientOptions) {
  const retries = Math.max(0, (o.attempts ?? 3) - 1);

  /** Runs one HTTP exchange, retrying network failures, timeouts, 429 and 5xx. */
  async function send(what: string, call: () => Promise<SafeResponse>): Promise<SafeResponse> {
    let last = '';
    try {
      return await pRetry(
        async () => {
          let res: SafeResponse;
          try {
            res = await call();
          } catch (e) {
            if (!(e instanceof SafeFetchError)) throw new AbortError(e as Error);
            last = e.code.replace('_', ' ');
            if (e.code === 'blocked_address' || e.code === 'invalid_url') throw new AbortError(e);
            throw e;
          }
          if (res.status === 429 || res.status >= 500) {
            last = `HTTP ${res.status}`;
            throw new Error(last);
          }
          return res;
        },
        { retries, minTimeout: 200, maxTimeout: 2000, factor: 3, randomize: true },
      );
    } catch (e) {
      if (isAppError(e)) throw e;
      if (e instanceof SafeFetchError && (e.code === 'blocked_address' || e.code === 'invalid_url'))
        throw googleError(
          'unavailable',
          `${what} was not called: ${e.code === 'invalid_url' ? 'its URL is not valid' : 'its address is not allowed (dsync.disallow_private_ip_ranges)'}`,
        );
      throw googleError('unavailable', `${what} did not answer successfully (${last || 'error'})`);
    }
  }

  async function token(form: Record<string, string>): Promise<TokenSet> {
    if (!o.clientId || !o.clientSecret)
      throw googleError(
        'not_configured',
        'Google Workspace sync is not configured: set dsync.google.client_id and dsync.google.client_secret',
      );
    const body = new URLSearchParams({ ...form, client_id: o.clientId, client_secret: o.clientSecret }).toString();
    const res = await send("Google's token endpoint", () =>
      o.fetch(o.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
      }),
    );
    const json = bodyJson(res);
    if (res.status !== 200) {
      const code = shortCode(tokenErrorBody.safeParse(json).data?.error);
      if (code === 'invalid_grant')
        throw googleError(
          'invalid_grant',
          'Google refused the grant (invalid_grant): it was revoked, has expired or was already used',
        );
      if (code === 'invalid_client' || code === 'unauthorized_client' || res.status === 401)
        throw googleError(
          'invalid_client',
          `Google refused the OAuth client (${code ?? `HTTP ${res.status}`}): check dsync.google.client_id and client_secret`,
        );
      throw googleError(
        'bad_response',
        `Google's token endpoint answered HTTP ${res.status}${code ? ` (${code})` : ''}`,
      );
    }
    const t = tokenResponse.safeParse(json);
    if (!t.success) throw googleError('bad_response', "Google's token endpoint answered with an unexpected body");
    return {
      accessToken: t.data.access_token,
      refreshToken: t.data.refresh_token || undefined,
      scope: t.data.scope ?? '',
      tokenType: t.data.token_type ?? 'Bearer',
      expiresIn: t.data.expires_in,
      idToken: t.data.id_token,
    };
  }

  /** `grant_type=authorization_code` with the redirect URI the authorization used. */
  const exchangeCode = (code: string) => token({ grant_type: 'authorization_code', code, redirect_uri: o.redirectUri });

  /** `grant_type=refresh_token`: a new access token (Google keeps the refresh token unless it says otherwise). */
  const refresh = (refreshToken: string) => token({ grant_type: 'refresh_token', refresh_token: refreshToken });

  function listUrl(kind: ListKind, groupKey: string | undefined, pageToken: string | undefined): string {
    const base = `${o.apiUrl}/admin/directory/v1`;
    const path = kind === 'members' ? `/groups/${encodeURIComponent(groupKey ?? '')}/members` : `/${kind}`;
    const q = new URLSearchParams();
    if (kind !== 'members') q.set('customer', 'my_customer');
    q.set('maxResults', String(PAGE_SIZE));
    if (pageToken) q.set('pageToken', pageToken);
    return `${base}${path}?${q.toString()}`;
  }

  /** One page of users, groups or a group's members. A page without the items key is empty. */
  async function listPage(
    kind: ListKind,
    accessToken: string,
    p: { groupKey?: string; pageToken?: string } = {},
  ): Promise<ListPage> {
    const what = "Google's Directory API";
    const res = await send(what, () =>
      o.fetch(listUrl(kind, p.groupKey, p.pageToken), {
        headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
      }),
    );
    const json = bodyJson(res);
    if (res.status !== 200) {
      const status = shortCode(apiErrorBody.safeParse(json).data?.error?.status);
      const detail = `HTTP ${res.status}${status ? ` ${status}` : ''}`;
      if (res.status === 401) throw googleError('unauthorized', `Google rejected the access token (${detail})`);
      if (res.status === 403)
        throw googleError(
          'forbidden',
          `Google refused access to the directory (${detail}): the authorizing account must be a Workspace administrator and grant the directory scopes`,
        );
      if (res.status === 404) throw googleError('not_found', `Google does not know the ${kind} listed (${detail})`);
      throw googleError('bad_response', `${what} answered ${detail}`);
    }
    const page = listResponse(kind).safeParse(json);
    if (!page.success) throw googleError('bad_response', `${what} answered with an unexpected ${kind} page`);
    return { items: page.data.items, nextPageToken: page.data.nextPageToken || undefined };
  }

  /**
   * The Workspace an access token belongs to: the `customerId` of the first user it lists (every
   * Workspace has at least the administrator who authorized). '' when none is listed.
   */
  async function customerId(accessToken: string): Promise<string> {
    const what = "Google's Directory API";
    const q = new URLSearchParams({ customer: 'my_customer', maxResults: '1' });
    const res = await send(what, () =>
      o.fetch(`${o.apiUrl}/admin/directory/v1/users?${q.toString()}`, {
        headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
      }),
    );
    if (res.status !== 200) throw googleError('bad_response', `${what} answered HTTP ${res.status}`);
    const users = (bodyJson(res) as { users?: Array<{ customerId?: unknown }> } | undefined)?.users;
    const id = Array.isArray(users) ? users[0]?.customerId : undefined;
    return typeof id === 'string' ? id : '';
  }

  return { exchangeCode, refresh, listPage, customerId };
}

export type GoogleClient = ReturnType<typeof createGoogleClient>;
