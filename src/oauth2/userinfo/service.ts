/**
 * OpenID Connect UserInfo (Core §5.3): the ID token claims recorded at consent time, minus the
 * per-token ones (nonce, at_hash, c_hash, exp, sid, jti), with `aud` always holding the client.
 * Clients registered with `userinfo_signed_response_alg: RS256` get a JWT signed with the OIDC key.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import { AppError } from '../../core/errors.ts';
import type { OAuth2Config } from '../deps.ts';
import { appendPath } from '../discovery/service.ts';
import type { Dpop } from '../dpop.ts';
import { OAUTH2_FAMILY, oauth2Error } from '../oauth-errors.ts';
import type { ClientPort, KeyPort } from '../ports.ts';
import { createSenderConstraint, type PresentedToken } from '../sender-constraint.ts';
import type { SessionCodec } from '../session-data.ts';
import { findAccessToken } from '../store/tokens.ts';
import type { Database } from '../tables.ts';
import { accessTokenSignature } from '../token/lookup.ts';
import { type GrantSession, idTokenClaims } from '../token/session.ts';
import { assertStatefulTokens } from '../token/stateless.ts';

export interface UserinfoDeps {
  dpop: Dpop;
  config: OAuth2Config;
  clock: Clock;
  db: Kysely<Database>;
  clients: ClientPort;
  keys: KeyPort;
  sessions: SessionCodec;
}

export type UserinfoResult = { kind: 'json'; body: Record<string, unknown> } | { kind: 'jwt'; token: string };

const bearer = (code: string, description: string) => ({
  'WWW-Authenticate': `Bearer error="${code}",error_description="${description.replaceAll('"', "'")}"`,
});

function unauthorized(hint: string): AppError {
  const e = oauth2Error('request_unauthorized', { hint });
  return oauth2Error('request_unauthorized', { hint, headers: bearer(e.code, `${e.description} ${hint}`) });
}

/** Hydra's quirk: a refresh token gets `invalid_token` in the header but a generic JSON body. */
function refreshTokenGiven(): AppError {
  return new AppError({
    status: 401,
    code: 'error',
    description: 'The error is unrecognizable',
    family: OAUTH2_FAMILY,
    headers: bearer('invalid_token', 'Only access tokens are allowed in the authorization header.'),
  });
}

export function createUserinfoService(d: UserinfoDeps) {
  const userinfoUrls = [
    d.config.webfinger.oidc_discovery.userinfo_url || appendPath(d.config.urls.self.public, '/userinfo'),
  ];
  const senderConstraint = createSenderConstraint(d);

  return {
    /** Throws 401 with `WWW-Authenticate` for a missing, unknown, expired or revoked token; 501 with stateless JWTs. */
    async userinfo(presented: PresentedToken): Promise<UserinfoResult> {
      const { token } = presented;
      assertStatefulTokens(d.config, 'userinfo');
      if (!token)
        throw unauthorized('Unable to find a suitable validation strategy for the token, thus it is invalid.');
      if (token.startsWith('ory_rt_')) throw refreshTokenGiven();
      const signature = await accessTokenSignature(d, token);
      const row = signature ? await findAccessToken(d.db, signature) : undefined;
      if (!row) throw unauthorized('Token is inactive because it is malformed, expired or otherwise invalid.');
      if (row.expiresAt && row.expiresAt.getTime() < d.clock.now().getTime()) {
        throw unauthorized('Token expired. Access token expired.');
      }
      const session = d.sessions.open<GrantSession>(row.sessionData);
      await senderConstraint(session, presented, userinfoUrls);
      const claims = idTokenClaims(session.idToken);
      for (const k of ['nonce', 'at_hash', 'c_hash', 'exp', 'sid', 'jti']) delete claims[k];
      const aud = Array.isArray(claims.aud) ? (claims.aud as string[]) : [];
      if (!aud.includes(row.clientId)) aud.push(row.clientId);
      claims.aud = aud;
      const client = await d.clients.get(row.clientId);
      const alg = client?.userinfoSignedResponseAlg ?? '';
      if (alg === 'RS256') {
        const key = await d.keys.signingKey('hydra.openid.id-token');
        const body = { ...claims, jti: randomUUID(), iat: Math.floor(d.clock.now().getTime() / 1000) };
        const jwt = await new SignJWT(body)
          .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
          .sign(key.key);
        return { kind: 'jwt', token: jwt };
      }
      if (alg && alg !== 'none') {
        throw oauth2Error('server_error', { hint: `Unsupported userinfo signing algorithm '${alg}'.` });
      }
      return { kind: 'json', body: claims };
    },
  };
}

export type UserinfoService = ReturnType<typeof createUserinfoService>;
