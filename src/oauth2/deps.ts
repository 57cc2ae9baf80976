/**
 * What the OAuth 2.0 domain needs from the process, and nothing more: the composition root
 * (src/container.ts) builds this and hands it to `createOAuth2`. The domain never sees the pool,
 * the embedded database, the process's `close()` or directory sync's outbound client.
 */
import type { Kysely } from 'kysely';
import type { Audit } from '../core/audit/events.ts';
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config/load.ts';
import type { ChangeFeed } from '../core/db/changes.ts';
import type { JobQueue } from '../core/jobs/queue.ts';
import type { Logger } from '../core/log.ts';
import type { SafeFetch } from '../core/safe-fetch.ts';
import type { Database } from './tables.ts';

/**
 * The configuration the OAuth 2.0 domain reads: its own sections (Hydra's `urls`, `ttl`,
 * `strategies`, `oauth2`, `oidc`, `webfinger`, `clients`, `feature_flags`, plus `janitor` and
 * `dev_ui`), and of the shared ones `secrets` (sealing at rest, cookie and pagination keys),
 * `serve` (cookie settings, request size limits), `dev`, `db.jwk_cache` (the key cache) and
 * `rate_limit` (wrong device user codes per address).
 */
export type OAuth2Config = Pick<
  Config,
  | 'urls'
  | 'ttl'
  | 'strategies'
  | 'oauth2'
  | 'oidc'
  | 'webfinger'
  | 'clients'
  | 'feature_flags'
  | 'janitor'
  | 'dev_ui'
  | 'secrets'
  | 'serve'
  | 'dev'
  | 'rate_limit'
> & { readonly db: Pick<Config['db'], 'jwk_cache'> };

export interface OAuth2Deps {
  config: OAuth2Config;
  log: Logger;
  clock: Clock;
  db: Kysely<Database>;
  /** Where transactions' jobs go: graphile-worker in `db`, or the outbox when `queue.dsn` is set. */
  queue: JobQueue;
  /**
   * The domain's guarded outbound client (`clients.http.*`: jwks_uri, sector_identifier_uri,
   * request_uri, back-channel logout, token hook).
   */
  fetch: SafeFetch;
  /**
   * The same client for clients created through dynamic registration: internal addresses refused
   * unless `oidc.dynamic_client_registration.allow_internal_addresses` (then it is `fetch` itself).
   */
  fetchDynamic: SafeFetch;
  /** Change notifications from other processes (prepared documents, key caches); listens on first use. */
  changes: ChangeFeed;
  /** Records audit events (rows in the caller's transaction with `audit.enabled`). */
  audit: Audit;
}
