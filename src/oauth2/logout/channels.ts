/**
 * Front- and back-channel logout (OpenID Connect Front-Channel Logout 1.0 and Back-Channel Logout
 * 1.0, as Hydra does them). When login sessions end, ONE indexed query finds the clients that took
 * part in them (src/oauth2/store/logout.ts); in the same transaction as the deletion, one
 * `oauth2_backchannel_logout` job per (session, client) with a `backchannel_logout_uri` is
 * enqueued, and the `frontchannel_logout_uri`s become the iframes of the logout page.
 *
 * Front-channel URLs always carry `iss` and `sid` (Hydra sends both whatever
 * `frontchannel_logout_session_required` says). The logout token is signed with the
 * `hydra.openid.id-token` key and carries iss, aud [client_id], iat, jti, sid and the back-channel
 * event — no `sub` and no `exp`, as Hydra: the subject may be pairwise per client and `sid`
 * identifies the session (the spec requires `sid` or `sub`).
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import { type SafeFetch, SafeFetchError } from '../../core/safe-fetch.ts';
import { isUsableUri } from '../clients/uri-policy.ts';
import type { OAuth2Config } from '../deps.ts';
import type { ClientPort, KeyPort } from '../ports.ts';
import { type LogoutClient, listLogoutClients } from '../store/logout.ts';
import type { Executor } from '../tables.ts';
import type { OAuth2Jobs } from '../tasks.ts';
import type { BackchannelPayload } from './schemas.ts';

export const BACKCHANNEL_TASK = 'oauth2_backchannel_logout' as const;

const BACKCHANNEL_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

export interface ChannelDeps {
  config: OAuth2Config;
  clock: Clock;
  keys: KeyPort;
  clients: ClientPort;
  /** The guarded outbound client (`OAuth2Deps.fetch`). */
  fetch: SafeFetch;
  /** Where the transaction's jobs go. */
  jobs: OAuth2Jobs;
  /** The one for clients created through dynamic registration (`OAuth2Deps.fetchDynamic`). */
  fetchDynamic?: SafeFetch;
  log: Logger;
}

export interface EndedSessions {
  /** iframe URLs of the logout page. */
  frontchannelUrls: string[];
  /** Back-channel jobs enqueued. */
  backchannel: number;
}

/**
 * `<frontchannel_logout_uri>?iss=…&sid=…` (other query parameters kept); undefined when the URI is
 * not a URL or not one a browser may load (a row stored before the scheme rules: uri-policy.ts).
 */
export function frontchannelUrl(uri: string, issuer: string, sid: string, dev = false): string | undefined {
  if (!URL.canParse(uri) || !isUsableUri(uri, 'web', dev)) return undefined;
  const u = new URL(uri);
  u.searchParams.set('iss', issuer);
  u.searchParams.set('sid', sid);
  return u.toString();
}

export function createLogoutChannels(d: ChannelDeps) {
  const issuer = d.config.urls.self.issuer;
  const log = d.log.child({ component: 'logout' });

  async function logoutToken(clientId: string, sid: string): Promise<string> {
    const key = await d.keys.signingKey('hydra.openid.id-token');
    return new SignJWT({ events: { [BACKCHANNEL_EVENT]: {} }, sid })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setIssuer(issuer)
      .setAudience([clientId])
      .setIssuedAt(Math.floor(d.clock.now().getTime() / 1000))
      .setJti(randomUUID())
      .sign(key.key);
  }

  async function clientsNotified(trx: Executor, rows: readonly LogoutClient[]): Promise<EndedSessions> {
    const jobs: BackchannelPayload[] = rows
      .filter((r) => r.backchannelLogoutUri)
      .map((r) => ({ sid: r.sid, clientId: r.clientId }));
    const backchannel = await d.jobs.addMany(trx, BACKCHANNEL_TASK, jobs, {
      maxAttempts: d.config.oauth2.backchannel_logout.max_attempts,
    });
    const frontchannelUrls: string[] = [];
    for (const r of rows) {
      if (!r.frontchannelLogoutUri) continue;
      const u = frontchannelUrl(r.frontchannelLogoutUri, issuer, r.sid, d.config.dev);
      if (u) frontchannelUrls.push(u);
      else {
        log.warn(
          { clientId: r.clientId },
          'front-channel logout skipped: frontchannel_logout_uri is not an allowed https URL',
        );
      }
    }
    return { frontchannelUrls, backchannel };
  }

  return {
    logoutToken,

    /**
     * Call in the transaction that deleted the sessions: finds their clients (one query) and
     * enqueues the back-channel notifications, so they exist if and only if the deletion commits.
     */
    async sessionsEnded(trx: Executor, sids: readonly string[]): Promise<EndedSessions> {
      return clientsNotified(trx, await listLogoutClients(trx, sids));
    },

    /** The same, for a caller that found the sessions' clients itself (in the statement that deleted them). */
    clientsNotified: (trx: Executor, rows: readonly LogoutClient[]) => clientsNotified(trx, rows),

    /**
     * The `oauth2_backchannel_logout` job: POSTs `logout_token=<JWT>` (form-encoded) to the client's
     * current `backchannel_logout_uri` through the guarded outbound client. Any 2xx is success;
     * anything else throws, and graphile-worker retries with backoff. A client that was deleted or
     * dropped its URI meanwhile is skipped.
     */
    async deliver(p: BackchannelPayload, attempt = 1): Promise<void> {
      const client = await d.clients.get(p.clientId);
      if (!client?.backchannelLogoutUri) {
        log.info({ clientId: p.clientId }, 'back-channel logout skipped: the client has no backchannel_logout_uri now');
        return;
      }
      const body = new URLSearchParams({ logout_token: await logoutToken(p.clientId, p.sid) }).toString();
      let status: number;
      try {
        const fetch = client.dynamic && d.fetchDynamic ? d.fetchDynamic : d.fetch;
        const res = await fetch(client.backchannelLogoutUri, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body,
          redirect: 'manual',
          timeoutMs: d.config.oauth2.backchannel_logout.timeout,
        });
        status = res.status;
      } catch (e) {
        const reason = e instanceof SafeFetchError ? e.message : 'the request failed';
        log.warn({ clientId: p.clientId, attempt, reason }, 'back-channel logout failed');
        throw new Error(`back-channel logout of client ${p.clientId} failed: ${reason}`);
      }
      if (status < 200 || status > 299) {
        log.warn({ clientId: p.clientId, attempt, status }, 'back-channel logout failed');
        throw new Error(`back-channel logout of client ${p.clientId} failed: the receiver answered HTTP ${status}`);
      }
      log.info({ clientId: p.clientId, attempt, status }, 'back-channel logout delivered');
    },
  };
}

export type LogoutChannels = ReturnType<typeof createLogoutChannels>;
