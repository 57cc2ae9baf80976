/**
 * A client's public keys (request objects, private_key_jwt assertions): its registered `jwks`, or
 * the set published at its `jwks_uri`, fetched through the guarded outbound client.
 *
 * These fetches happen before any signature is checked, on requests nobody authenticated, so they
 * are bounded: a key set fetched from `jwks_uri` is kept per client for `oauth2.client_jwks.cache_ttl`;
 * a client's `jwks_uri` is fetched at most once per `oauth2.client_jwks.min_refetch_interval` (a
 * failure is remembered that long, and a forced refresh for an unknown `kid` waits for it too);
 * concurrent requests share one fetch. A failure is reported with one fixed message that names no
 * status, address or timing (the details go to the log), so the endpoint cannot be used to probe
 * what answers where. Clients created through dynamic registration are fetched with the client
 * that refuses internal addresses.
 */
import type { JWK } from 'jose';
import { keepNewest } from '../core/bounded.ts';
import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/log.ts';
import { type SafeFetch, SafeFetchError } from '../core/safe-fetch.ts';
import type { FlowClient } from './ports.ts';

export class ClientKeysError extends Error {
  override name = 'ClientKeysError';
}

/** The one message of every jwks_uri failure. */
export const JWKS_UNAVAILABLE = "The OAuth 2.0 Client's JSON Web Key Set could not be retrieved from its jwks_uri.";
const NO_KEYS =
  'The OAuth 2.0 Client has no JSON Web Keys set registered, but they are needed to complete the request.';

/** Most clients whose fetched key sets are kept (the oldest entry goes first). */
const MAX_ENTRIES = 10_000;

interface Entry {
  keys?: JWK[];
  fetchedAt: number;
}

export interface ClientKeySourceDeps {
  /** The guarded outbound client for operator-created clients. */
  fetch: SafeFetch;
  /** The one for clients created through dynamic registration. */
  fetchDynamic: SafeFetch;
  clock: Clock;
  log?: Logger;
  /** `oauth2.client_jwks.cache_ttl` (ms). */
  ttlMs: number;
  /** `oauth2.client_jwks.min_refetch_interval` (ms). */
  minRefetchMs: number;
}

export interface ClientKeys {
  keys: JWK[];
  /** True when they came from `jwks_uri` and a refresh may find newer ones. */
  fetched: boolean;
}

export function createClientKeySource(d: ClientKeySourceDeps) {
  const cache = new Map<string, Entry>();
  const inflight = new Map<string, Promise<Entry>>();
  const log = d.log?.child({ component: 'client_jwks' });

  async function load(client: FlowClient, key: string): Promise<Entry> {
    const fetch = client.dynamic ? d.fetchDynamic : d.fetch;
    const fetchedAt = d.clock.now().getTime();
    let keys: JWK[] | undefined;
    try {
      const r = await fetch(client.jwksUri, { headers: { accept: 'application/json' } });
      if (r.status !== 200) {
        log?.info({ clientId: client.id, status: r.status }, 'client jwks_uri fetch failed');
      } else {
        const body = r.json<{ keys?: unknown }>();
        if (Array.isArray(body?.keys)) keys = body.keys as JWK[];
        else log?.info({ clientId: client.id, reason: 'not a JSON Web Key Set' }, 'client jwks_uri fetch failed');
      }
    } catch (e) {
      if (!(e instanceof SafeFetchError)) throw e;
      log?.info({ clientId: client.id, reason: e.code }, 'client jwks_uri fetch failed');
    }
    const entry: Entry = { ...(keys ? { keys } : {}), fetchedAt };
    keepNewest(cache, key, entry, MAX_ENTRIES);
    return entry;
  }

  /**
   * The client's keys. `refresh`: the cached set lacked the key a token named; fetch again unless
   * the last fetch was less than the minimum refetch interval ago.
   * @throws ClientKeysError (fixed messages)
   */
  async function keysOf(client: FlowClient, opts: { refresh?: boolean } = {}): Promise<ClientKeys> {
    if (client.jwks?.keys?.length) return { keys: client.jwks.keys, fetched: false };
    if (!client.jwksUri) throw new ClientKeysError(NO_KEYS);
    const key = `${client.id}\n${client.jwksUri}`;
    const now = d.clock.now().getTime();
    const cached = cache.get(key);
    const fresh = (e: Entry) =>
      now - e.fetchedAt < (e.keys && !opts.refresh ? d.ttlMs : Math.min(d.minRefetchMs, d.ttlMs));
    let entry = cached && fresh(cached) ? cached : undefined;
    if (!entry) {
      let p = inflight.get(key);
      if (!p) {
        p = load(client, key).finally(() => inflight.delete(key));
        inflight.set(key, p);
      }
      entry = await p;
    }
    if (!entry.keys) throw new ClientKeysError(JWKS_UNAVAILABLE);
    return { keys: entry.keys, fetched: true };
  }

  return { keys: keysOf };
}

export type ClientKeySource = ReturnType<typeof createClientKeySource>;

/** What request objects and client authentication use to reach a client's URIs. */
export interface ClientOutbound {
  /** The client's keys (cached, rate-limited; see above). */
  keys: ClientKeySource['keys'];
  /** The guarded outbound client for this client's URIs (request_uri, back-channel logout). */
  fetchFor(client: Pick<FlowClient, 'dynamic'>): SafeFetch;
}

export function createClientOutbound(d: ClientKeySourceDeps): ClientOutbound {
  const source = createClientKeySource(d);
  return { keys: source.keys, fetchFor: (c) => (c.dynamic ? d.fetchDynamic : d.fetch) };
}
