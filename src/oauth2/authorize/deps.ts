/** Everything the authorization endpoint's steps need. */
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import type { ClientOutbound } from '../client-keys.ts';
import type { OAuth2Config } from '../deps.ts';
import type { FlowCodec } from '../flows/challenge.ts';
import type { CookieJar, FlowCookies } from '../flows/cookies.ts';
import type { ClientPort, KeyPort } from '../ports.ts';
import type { SessionCodec } from '../session-data.ts';
import type { Database } from '../tables.ts';
import type { TokenIssuer } from '../token/issue.ts';

export interface AuthorizeDeps {
  config: OAuth2Config;
  clock: Clock;
  db: Kysely<Database>;
  /** The client's keys and guarded outbound client (request_uri, jwks_uri). */
  outbound: ClientOutbound;
  codec: FlowCodec;
  cookies: FlowCookies;
  clients: ClientPort;
  keys: KeyPort;
  sessions: SessionCodec;
  issuer: TokenIssuer;
}

export type { CookieJar };

export const unixNow = (d: AuthorizeDeps) => Math.floor(d.clock.now().getTime() / 1000);
