/** What the grant handlers need. */
import type { Kysely } from 'kysely';
import type { Clock } from '../../../core/clock.ts';
import type { Database } from '../../../core/db/schema.ts';
import type { OAuth2Config } from '../../deps.ts';
import type { SessionCodec } from '../../session-data.ts';
import type { TrustService } from '../../trust/service.ts';
import type { TokenIssuer } from '../issue.ts';

export interface GrantDeps {
  config: OAuth2Config;
  clock: Clock;
  db: Kysely<Database>;
  sessions: SessionCodec;
  issuer: TokenIssuer;
  /** Trusted JWT-bearer issuers and their keys (RFC 7523 grant). */
  trust: Pick<TrustService, 'keysFor'>;
  /** Accepted `aud` values of assertions: the public token URL and the issuer-derived one. */
  tokenUrls: readonly string[];
}
