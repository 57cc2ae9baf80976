/**
 * The admin authorization of a Google directory (Jackson `GoogleAuth`):
 * the authorization URL (offline access, forced consent, the three read-only directory scopes and
 * a signed state), the code exchange, storing the tokens, and the access tokens a sync uses.
 *
 * Differences from Jackson, on purpose: the state is signed, short-lived and bound to the directory
 * (and, through the HTTP routes, to the browser); the token expiry is stored, and a refreshed access
 * token is stored too, so a sync does not pay a refresh per call once the first token expired.
 */

import type { Clock } from '../../../core/clock.ts';
import type { KeyRing } from '../../../core/crypto/keys.ts';
import { randomToken } from '../../../core/crypto/random.ts';
import type { Logger } from '../../../core/log.ts';
import type { DirectoriesService } from '../../directories/service.ts';
import { dsyncError } from '../../errors.ts';
import type { Directory, DirectoryRecord } from '../../types.ts';
import { type GoogleClient, googleError } from './client.ts';
import { type AuthorizationLinks, type AuthorizationVerifier, verifyAuthorizationProof } from './link.ts';
import { signState, verifyState } from './state.ts';

/** Admin SDK Directory API scopes: users, groups and memberships, read-only. */
export const GOOGLE_SCOPES = [
  'https://www.googleapis.com/auth/admin.directory.user.readonly',
  'https://www.googleapis.com/auth/admin.directory.group.readonly',
  'https://www.googleapis.com/auth/admin.directory.group.member.readonly',
] as const;

/** A token that expires within this margin is refreshed before use. */
const EXPIRY_MARGIN_MS = 60_000;

export interface GoogleAuthOptions {
  clock: Clock;
  log: Logger;
  directories: DirectoriesService;
  client: GoogleClient;
  /** keyRing(secrets.system, 'state') */
  stateRing: KeyRing;
  clientId: string;
  authUrl: string;
  redirectUri: string;
  /** The proofs the HTTP authorize route accepts (link.ts); none: the route refuses every start. */
  verifiers?: readonly AuthorizationVerifier[];
  /** Mints authorization links (the admin API); with `authorizeUrl`, the public authorize route's URL. */
  links?: AuthorizationLinks;
  authorizeUrl?: string;
}

/** Jackson's `Credentials` (google-auth-library): `expiry_date` in milliseconds since the epoch. */
export interface AccessTokenResult {
  access_token: string;
  refresh_token: string | undefined;
  scope: string;
  token_type: string;
  expiry_date: number | undefined;
  id_token?: string;
}

/** The access token of a sync, refreshed (and stored) when it expires or Google rejects it. */
export interface TokenSource {
  current(): Promise<string>;
  refresh(): Promise<string>;
}

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * Google authorization of a directory: the authorization URL and links, the callback that stores
 * the tokens, and the token source of a sync.
 * Long: every step reads the same directory row and the same signed state.
 */
export function createGoogleAuth(o: GoogleAuthOptions) {
  /** The directory record when it is a Google directory. Throws 400/404 as `directories.get`, then 400. */
  async function googleDirectory(directoryId: unknown): Promise<DirectoryRecord> {
    const d = await o.directories.get(directoryId);
    if (d.type !== 'google') throw dsyncError(400, 'Directory is not a Google Directory');
    return d;
  }

  async function authorizationUrl(directoryId: string, nonce?: string, replaceWorkspace = false): Promise<string> {
    if (!o.clientId)
      throw googleError('not_configured', 'Google Workspace sync is not configured: set dsync.google.client_id');
    const u = new URL(o.authUrl);
    const state = await signState(
      o.stateRing,
      { directoryId, ...(nonce ? { nonce } : {}), ...(replaceWorkspace ? { replaceWorkspace } : {}) },
      o.clock.now(),
    );
    const params = {
      access_type: 'offline',
      prompt: 'consent',
      response_type: 'code',
      client_id: o.clientId,
      redirect_uri: o.redirectUri,
      scope: GOOGLE_SCOPES.join(' '),
      state,
    };
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    return u.toString();
  }

  /** `google.generateAuthorizationUrl({directoryId})` → `{authorizationUrl}`. Throws 400/404. */
  async function generateAuthorizationUrl(p: { directoryId?: unknown } = {}) {
    const d = await googleDirectory(p?.directoryId);
    return { authorizationUrl: await authorizationUrl(d.id) };
  }

  /**
   * The HTTP authorize route: the same URL, with a state bound to a nonce the browser keeps in a
   * cookie. Needs a proof (an authorization link token) for the directory: 401 otherwise, before
   * the directory is even looked up (so the route tells nothing about ids).
   */
  async function startAuthorization(p: { directoryId: string; token?: string | undefined }) {
    const grant = await verifyAuthorizationProof(o.verifiers ?? [], p.directoryId, p.token);
    const d = await googleDirectory(grant.directoryId);
    const nonce = randomToken(24);
    return { authorizationUrl: await authorizationUrl(d.id, nonce, grant.replaceWorkspace), nonce };
  }

  /**
   * `POST /api/v1/dsync/{id}/google/authorization-link`: a short-lived link to the public authorize
   * route for a Google directory. Throws 400/404 as `directories.get`, then 400 for other types.
   */
  async function authorizationLink(p: { directoryId?: unknown; replaceWorkspace?: boolean }) {
    const d = await googleDirectory(p.directoryId);
    if (!o.links || !o.authorizeUrl) throw dsyncError(500, 'Authorization links are not configured.');
    const { token, expiresAt } = await o.links.mint(d.id, { replaceWorkspace: p.replaceWorkspace === true });
    const u = new URL(o.authorizeUrl);
    u.searchParams.set('directoryId', d.id);
    u.searchParams.set('token', token);
    return { url: u.toString(), expires_at: expiresAt.toISOString(), replace_workspace: p.replaceWorkspace === true };
  }

  /** `google.getAccessToken({directoryId, code})`: the code exchange. Throws 400 / 502. */
  async function getAccessToken(p: { directoryId?: unknown; code?: unknown } = {}): Promise<AccessTokenResult> {
    const code = str(p?.code);
    if (!code) throw dsyncError(400, 'Missing required parameters.');
    const t = await o.client.exchangeCode(code);
    return {
      access_token: t.accessToken,
      refresh_token: t.refreshToken,
      scope: t.scope,
      token_type: t.tokenType,
      expiry_date: t.expiresIn === undefined ? undefined : o.clock.now().getTime() + t.expiresIn * 1000,
      ...(t.idToken ? { id_token: t.idToken } : {}),
    };
  }

  /**
   * `google.setToken({directoryId, accessToken, refreshToken})` → the directory with its tokens.
   * `expiryDate` (ms, optional) is gatehouse's: without it the token is used until Google rejects it.
   */
  async function setToken(
    p: { directoryId?: unknown; accessToken?: unknown; refreshToken?: unknown; expiryDate?: unknown } = {},
  ): Promise<DirectoryRecord> {
    const accessToken = str(p?.accessToken);
    const refreshToken = str(p?.refreshToken);
    if (!accessToken) throw dsyncError(400, 'Access token is required');
    if (!refreshToken) throw dsyncError(400, 'Refresh token is required');
    const id = str(p.directoryId);
    const current = id ? await o.directories.load(id) : undefined;
    if (!current) throw dsyncError(400, 'Failed to update directory');
    if (current.type !== 'google') throw dsyncError(400, 'Directory is not a Google Directory');
    const expiry = typeof p.expiryDate === 'number' && Number.isFinite(p.expiryDate) ? new Date(p.expiryDate) : null;
    const d = await o.directories.setGoogleTokens(current.id, { accessToken, refreshToken, expiresAt: expiry });
    if (!d) throw dsyncError(400, 'Failed to update directory');
    return o.directories.record(d);
  }

  /**
   * The callback: checks the state (and the browser's nonce), exchanges the code and stores the
   * tokens. Throws 400 for a bad state, a declined consent or a rejected code; 404 for a directory
   * deleted meanwhile; 502 when Google cannot be reached.
   */
  async function completeAuthorization(p: { code?: string; state?: string; error?: string; nonce?: string }) {
    const state = await verifyState(o.stateRing, p.state, o.clock.now(), p.nonce);
    const d = await googleDirectory(state.directoryId);
    if (p.error) {
      const code = /^[a-z_]{1,64}$/.test(p.error) ? p.error : 'error';
      throw dsyncError(400, `Google did not grant access (${code}). Start the authorization of the directory again.`);
    }
    const t = await getAccessToken({ directoryId: d.id, code: p.code });
    // Which Workspace these tokens read. Replacing the connected one with another needs the
    // operator's say-so (replace_workspace on the link): the next sync would delete every user.
    const customerId = await o.client.customerId(t.access_token);
    const current = await o.directories.load(d.id);
    const recorded = current?.googleCustomerId ?? '';
    if (recorded && recorded !== customerId && !state.replaceWorkspace) {
      o.log.warn({ directoryId: d.id }, 'google authorization refused: another Workspace than the connected one');
      throw dsyncError(
        409,
        'This Google Workspace is not the one connected to the directory; its tokens were not stored. To connect a different Workspace, ask the operator for an authorization link with replace_workspace.',
      );
    }
    // A directory authorized before Workspaces were recorded ('') keeps its old behaviour.
    const sameWorkspace = recorded === '' || recorded === customerId;
    const refreshToken = t.refresh_token || (sameWorkspace ? d.google_refresh_token : '');
    if (!refreshToken)
      throw dsyncError(400, 'Google returned no refresh token. Start the authorization of the directory again.');
    const saved = await setToken({
      directoryId: d.id,
      accessToken: t.access_token,
      refreshToken,
      expiryDate: t.expiry_date,
    });
    await o.directories.setGoogleTokens(d.id, {
      accessToken: t.access_token,
      expiresAt: t.expiry_date === undefined ? null : new Date(t.expiry_date),
      customerId,
    });
    o.log.info({ directoryId: d.id }, 'google directory authorized: tokens stored');
    return saved;
  }

  /** The access token for a sync of `d`, refreshed before it expires and whenever `refresh()` is asked. */
  function tokenSource(d: Directory): TokenSource {
    let access = d.googleAccessToken;
    let expiresAt = d.googleAccessTokenExpiresAt;
    let refreshToken = d.googleRefreshToken;
    async function refresh(): Promise<string> {
      if (!refreshToken) throw googleError('invalid_grant', 'the directory has no refresh token: authorize it again');
      const t = await o.client.refresh(refreshToken).catch((e) => {
        if (e?.code === 'google_invalid_grant')
          throw googleError(
            'invalid_grant',
            'Google refused the refresh token (invalid_grant): the authorization was revoked or has expired; authorize the directory again',
          );
        throw e;
      });
      access = t.accessToken;
      expiresAt = t.expiresIn === undefined ? null : new Date(o.clock.now().getTime() + t.expiresIn * 1000);
      if (t.refreshToken) refreshToken = t.refreshToken;
      await o.directories.setGoogleTokens(d.id, {
        accessToken: access,
        expiresAt,
        ...(t.refreshToken ? { refreshToken: t.refreshToken } : {}),
      });
      o.log.info({ directoryId: d.id }, 'google access token refreshed and stored');
      return access;
    }
    const fresh = () =>
      access !== '' && (expiresAt === null || expiresAt.getTime() - EXPIRY_MARGIN_MS > o.clock.now().getTime());
    return { current: async () => (fresh() ? access : refresh()), refresh };
  }

  return {
    generateAuthorizationUrl,
    authorizationLink,
    startAuthorization,
    getAccessToken,
    setToken,
    completeAuthorization,
    tokenSource,
  };
}
