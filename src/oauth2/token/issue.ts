/**
 * Token issuance, shared by every grant: authorization codes, access tokens (opaque `ory_at_` or JWT
 * per `strategies.access_token` / the client's `access_token_strategy`; stateless JWTs, never
 * stored, with `strategies.jwt.stateless.enabled`), refresh tokens (always opaque) and ID tokens.
 * Only signatures are stored; all rows of a grant share its request id. The token endpoint's rows
 * are planned here and written by store/token-plan.ts; `accessToken` and `authorizationCode` write
 * theirs within the authorization endpoint's own transaction.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Clock } from '../../core/clock.ts';
import { generateOpaqueToken } from '../../core/crypto/hmac.ts';
import { VC_SCOPE, type VcNonces } from '../credentials/nonce.ts';
import type { OAuth2Config } from '../deps.ts';
import type { FlowClient, KeyPort, LifespanKey } from '../ports.ts';
import { clientGrantTypes, isPublicClient } from '../ports.ts';
import type { SessionCodec } from '../session-data.ts';
import type { TokenPlan } from '../store/token-plan.ts';
import { type CodeRecord, insertAccessToken, insertCode, type TokenRecord } from '../store/tokens.ts';
import type { Executor } from '../tables.ts';
import type { Grant, GrantKind } from './grant.ts';
import type { HookPayload, TokenHook } from './hook.ts';
import { accessTokenClaims } from './jwt-claims.ts';
import { type Confirmation, type GrantSession, idTokenClaims } from './session.ts';
import { signJwt } from './sign.ts';

type TokenKind = 'access_token' | 'id_token' | 'refresh_token';

export interface IssuedToken {
  token: string;
  signature: string;
  expiresAt: Date | null;
}

/** A token built but not yet stored; `row` is undefined for stateless JWT access tokens. */
export interface MintedToken extends IssuedToken {
  /** Seconds from issuance to expiry (the `expires_in` of the response). */
  expiresIn: number;
  row: (TokenRecord & { expiresAt: Date }) | undefined;
}

/** The tokens of a token endpoint answer, signed, with the plan that stores them (store/token-plan.ts). */
export interface IssuedTokens extends TokenPlan {
  response: TokenResponse;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
  /** OpenID for Verifiable Credential Issuance (draft 00): with `openid` and `userinfo_credential_draft_00`. */
  c_nonce_draft_00?: string;
  c_nonce_expires_in_draft_00?: number;
  /** RFC 8693 §2.2.1: what a token exchange issued. */
  issued_token_type?: string;
}

export interface IssuerDeps {
  config: OAuth2Config;
  clock: Clock;
  keys: KeyPort;
  sessions: SessionCodec;
  /** `oauth2.token_hook`, run by `planTokens` before anything is signed. */
  hook?: TokenHook;
  /** Verifiable-credential nonces for grants holding `openid` and `userinfo_credential_draft_00`. */
  vcNonces?: VcNonces;
}

/** `at_hash` / `c_hash`: left half of the hash named by the JWS alg, base64url (OIDC Core §3.1.3.6). */
export function halfHash(alg: string, value: string): string {
  const bits = alg.endsWith('384') ? 'sha384' : alg.endsWith('512') ? 'sha512' : 'sha256';
  const d = createHash(bits).update(value, 'ascii').digest();
  return d.subarray(0, d.length / 2).toString('base64url');
}

export const canIssueRefreshToken = (grant: Grant) =>
  (grant.grantedScope.includes('offline') || grant.grantedScope.includes('offline_access')) &&
  clientGrantTypes(grant.client).includes('refresh_token');

/** The PKCE and redirect-URI values an authorization code keeps. */
type Pkce = { redirectUri: string; codeChallenge: string; codeChallengeMethod: string };

/** Effective lifespan in ms (-1: never), the client's per-grant value winning over `ttl.*`. */
function lifespan(d: IssuerDeps, client: FlowClient, kind: GrantKind, token: TokenKind): number {
  const key = `${kind}_grant_${token}_lifespan` as LifespanKey;
  const own = client.lifespans[key];
  if (typeof own === 'number') return own;
  return d.config.ttl[token];
}

/** The grant session as one token carries it: bound to `cnf`, or to nothing. */
function sessionBoundTo(session: GrantSession, cnf: Confirmation | undefined): GrantSession {
  if (cnf) return { ...session, cnf };
  if (!session.cnf) return session;
  const { cnf: _unbound, ...rest } = session;
  return rest;
}

const tokenRecord = (d: IssuerDeps, grant: Grant, signature: string, expiresAt: Date | null) => ({
  signature,
  requestId: grant.requestId,
  clientId: grant.client.id,
  subject: grant.session.subject,
  requestedScope: grant.requestedScope,
  grantedScope: grant.grantedScope,
  requestedAudience: grant.requestedAudience,
  grantedAudience: grant.grantedAudience,
  requestedAt: grant.requestedAt,
  expiresAt,
  sessionData: d.sessions.seal(grant.session),
});

const jwtStrategy = (d: IssuerDeps, client: FlowClient) =>
  d.config.strategies.jwt.stateless.enabled ||
  (client.accessTokenStrategy || d.config.strategies.access_token) === 'jwt';

/**
 * Builds an access token without storing it: opaque `ory_at_`, a JWT, or — with
 * `strategies.jwt.stateless.enabled` — a self-contained JWT that carries the stateless claim and
 * is never written (`row` undefined).
 */
async function mintAccessToken(d: IssuerDeps, whole: Grant, kind: GrantKind): Promise<MintedToken> {
  const grant = {
    ...whole,
    grantedAudience: whole.accessTokenAudience ?? whole.grantedAudience,
    session: sessionBoundTo(whole.session, whole.cnf),
  };
  const now = d.clock.now();
  const ms = lifespan(d, grant.client, kind, 'access_token');
  // Expiry rounded to the second (JWT exp), as Hydra rounds it; expires_in is the lifespan itself.
  const expiresAt = new Date(Math.round((now.getTime() + ms) / 1000) * 1000);
  const stateless = d.config.strategies.jwt.stateless;
  let token: string;
  let signature: string;
  if (jwtStrategy(d, grant.client)) {
    const key = await d.keys.signingKey('hydra.jwt.access-token');
    const claims = accessTokenClaims(d.config, grant, now, expiresAt);
    if (stateless.enabled) claims[stateless.claim_name] = true;
    token = await signJwt(claims, key);
    signature = token.split('.')[2] as string;
  } else {
    ({ token, signature } = generateOpaqueToken('ory_at_', d.config.secrets.system));
  }
  const row = stateless.enabled ? undefined : { ...tokenRecord(d, grant, signature, expiresAt), expiresAt };
  const expiresIn = Math.max(0, Math.round(ms / 1000));
  return { token, signature, expiresAt, expiresIn, row };
}

async function accessToken(d: IssuerDeps, db: Executor, grant: Grant, kind: GrantKind): Promise<MintedToken> {
  const t = await mintAccessToken(d, grant, kind);
  if (t.row) await insertAccessToken(db, t.row);
  return t;
}

function mintRefreshToken(d: IssuerDeps, whole: Grant, kind: GrantKind, accessSignature: string) {
  // A public client's refresh token is bound to what its access token is bound to: the DPoP key
  // (RFC 9449 §5) and/or the client certificate (RFC 8705 §4, `x5t#S256`, a client registered with
  // tls_client_certificate_bound_access_tokens); the refresh must prove it again
  // (grants/refresh-token.ts). A confidential client's is not: its authentication binds it already
  // (RFC 8705 §7.1), and each refresh may bind the new access token to another key or certificate.
  const cnf = isPublicClient(whole.client) ? whole.cnf : undefined;
  const grant = { ...whole, session: sessionBoundTo(whole.session, cnf) };
  const ms = lifespan(d, grant.client, kind, 'refresh_token');
  const expiresAt = ms < 0 ? null : new Date(d.clock.now().getTime() + ms);
  const { token, signature } = generateOpaqueToken('ory_rt_', d.config.secrets.system);
  const row = { ...tokenRecord(d, grant, signature, expiresAt), accessTokenSignature: accessSignature };
  return { token, signature, expiresAt, row };
}

/** Builds an authorization code without storing it (`row` is what `insertCode` writes). */
function mintAuthorizationCode(
  d: IssuerDeps,
  grant: Grant,
  pkce: Pkce,
): IssuedToken & { row: Omit<CodeRecord, 'active'> } {
  const expiresAt = new Date(d.clock.now().getTime() + d.config.ttl.auth_code);
  const { token, signature } = generateOpaqueToken('ory_ac_', d.config.secrets.system);
  return { token, signature, expiresAt, row: { ...tokenRecord(d, grant, signature, expiresAt), expiresAt, ...pkce } };
}

async function authorizationCode(d: IssuerDeps, db: Executor, grant: Grant, pkce: Pkce): Promise<IssuedToken> {
  const { row, ...code } = mintAuthorizationCode(d, grant, pkce);
  await insertCode(db, row);
  return code;
}

/** Signs an ID token with `hydra.openid.id-token`; `accessToken`/`code` add at_hash/c_hash. */
async function idToken(
  d: IssuerDeps,
  grant: Grant,
  kind: GrantKind,
  bind: { accessToken?: string; code?: string } = {},
) {
  const key = await d.keys.signingKey('hydra.openid.id-token');
  const now = Math.floor(d.clock.now().getTime() / 1000);
  const claims: Record<string, unknown> = {
    ...idTokenClaims(grant.session.idToken),
    iat: now,
    exp: now + Math.floor(lifespan(d, grant.client, kind, 'id_token') / 1000),
    jti: randomUUID(),
  };
  if (bind.accessToken) claims.at_hash = halfHash(key.alg, bind.accessToken);
  if (bind.code) claims.c_hash = halfHash(key.alg, bind.code);
  return signJwt(claims, key);
}

/**
 * The token endpoint response, signed and ready, and the plan of its rows (spending nothing: a
 * grant that spends a code, a device request or a refresh token sets `spend`); the store's
 * `persistPlan` writes them. Grants that hold a row lock plan before taking it, so no signing, no
 * token hook call (and no other pooled connection) happens while the lock is held. The token hook
 * runs first and may replace the grant session's custom claims; `hookPayload` is what it sees of
 * the form.
 */
async function planTokens(
  d: IssuerDeps,
  original: Grant,
  kind: GrantKind,
  hookPayload?: HookPayload,
): Promise<IssuedTokens> {
  const grant = d.hook ? await d.hook(original, kind, hookPayload) : original;
  const at = await mintAccessToken(d, grant, kind);
  const response: TokenResponse = {
    access_token: at.token,
    // RFC 9449 §5: a DPoP-bound token says so (Hydra's unbound ones, and certificate-bound ones,
    // RFC 8705 §3, stay 'bearer').
    token_type: grant.cnf?.jkt ? 'DPoP' : 'bearer',
    expires_in: at.expiresIn,
    scope: grant.grantedScope.join(' '),
  };
  // Machine grants (client_credentials, jwt-bearer) and token exchange (RFC 8693 §2.2.1: an
  // access token only) never get a refresh token or an ID token.
  const userGrant = kind !== 'client_credentials' && kind !== 'jwt_bearer' && kind !== 'token_exchange';
  const rt = userGrant && canIssueRefreshToken(grant) ? mintRefreshToken(d, grant, kind, at.signature) : undefined;
  if (rt) response.refresh_token = rt.token;
  if (userGrant && grant.grantedScope.includes('openid')) {
    response.id_token = await idToken(d, grant, kind, { accessToken: at.token });
  }
  if (d.vcNonces && at.row && grant.grantedScope.includes('openid') && grant.grantedScope.includes(VC_SCOPE)) {
    response.c_nonce_draft_00 = await d.vcNonces.issue(at.signature);
    response.c_nonce_expires_in_draft_00 = Math.round(d.vcNonces.lifespanMs / 1000);
  }
  return {
    response,
    spend: { kind: 'none' },
    rows: { access: at.row, refresh: rt?.row },
    events: [
      {
        type: kind === 'refresh_token' ? 'oauth2.tokens.refreshed' : 'oauth2.tokens.issued',
        actor: { kind: 'client', id: grant.client.id },
        target: { kind: 'grant', id: grant.requestId },
        details: { grant: kind, subject: grant.session.subject, refresh_token_issued: !!rt },
      },
    ],
  };
}

/** The issuer of a process: the functions above, bound to its configuration, keys, clock and hook. */
export function createTokenIssuer(d: IssuerDeps) {
  return {
    lifespan: (client: FlowClient, kind: GrantKind, token: TokenKind) => lifespan(d, client, kind, token),
    accessToken: (db: Executor, grant: Grant, kind: GrantKind) => accessToken(d, db, grant, kind),
    authorizationCode: (db: Executor, grant: Grant, pkce: Pkce) => authorizationCode(d, db, grant, pkce),
    mintAuthorizationCode: (grant: Grant, pkce: Pkce) => mintAuthorizationCode(d, grant, pkce),
    idToken: (grant: Grant, kind: GrantKind, bind?: { accessToken?: string; code?: string }) =>
      idToken(d, grant, kind, bind),
    planTokens: (grant: Grant, kind: GrantKind, hookPayload?: HookPayload) => planTokens(d, grant, kind, hookPayload),
  };
}

export type TokenIssuer = ReturnType<typeof createTokenIssuer>;
