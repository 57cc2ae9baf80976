/**
 * Hydra's cookies: the login session cookie (`ory_hydra_session`) holding `sid`, and per
 * client CSRF cookies (`ory_hydra_login_csrf_<murmur3(client_id)>`, `…consent_csrf_…`). Values are
 * compact JWEs under `keyRing(cookie secrets, 'cookie')`; `_dev` is added to names in dev mode.
 * Services see cookies through the small CookieJar interface, never through Koa.
 */

import { openJson, sealJson } from '../../core/crypto/jwe.ts';
import type { KeyRing } from '../../core/crypto/keys.ts';
import type { OAuth2Config } from '../deps.ts';

export interface CookieOptions {
  maxAgeMs?: number;
  path?: string;
}

/** The request's cookies, as a service sees them. */
export interface CookieJar {
  get(name: string): string | undefined;
  set(name: string, value: string, opts?: CookieOptions): void;
  clear(name: string, opts?: CookieOptions): void;
}

/** MurmurHash3 x86 32-bit (seed 0) over the UTF-8 bytes, as Hydra's CookieSuffix uses it. */
export function murmur3(input: string): number {
  const data = Buffer.from(input, 'utf8');
  let h = 0;
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const nblocks = data.length >> 2;
  for (let i = 0; i < nblocks; i++) {
    let k = data.readUInt32LE(i * 4);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = nblocks * 4;
  const rest = data.length & 3;
  if (rest > 0) {
    let k = 0;
    if (rest === 3) k ^= (data[tail + 2] as number) << 16;
    if (rest >= 2) k ^= (data[tail + 1] as number) << 8;
    k ^= data[tail] as number;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= data.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export interface FlowCookies {
  sessionName: string;
  loginCsrfName(clientId: string): string;
  consentCsrfName(clientId: string): string;
  /** The device verification CSRF cookie (one per browser, not per client: the client is not known yet). */
  deviceCsrfName: string;
  sealCsrf(csrf: string): Promise<string>;
  openCsrf(value: string | undefined): Promise<string | undefined>;
  sealSession(sid: string, ttlMs: number): Promise<string>;
  openSession(value: string | undefined): Promise<string | undefined>;
}

export function createFlowCookies(config: OAuth2Config, ring: KeyRing, now: () => Date): FlowCookies {
  const dev = config.dev ? '_dev' : '';
  const names = config.serve.cookies.names;
  const ttl = config.ttl.login_consent_request;
  const open = async (typ: string, value: string | undefined): Promise<string | undefined> => {
    if (!value) return undefined;
    try {
      return await openJson<string>(ring, typ, value, now().getTime());
    } catch {
      return undefined;
    }
  };
  return {
    sessionName: `${names.session}${dev}`,
    loginCsrfName: (id) => `${names.login_csrf}${dev}_${murmur3(id)}`,
    consentCsrfName: (id) => `${names.consent_csrf}${dev}_${murmur3(id)}`,
    deviceCsrfName: `${names.device_csrf}${dev}`,
    sealCsrf: (csrf) => sealJson(ring, 'csrf', csrf, ttl, now().getTime()),
    openCsrf: (v) => open('csrf', v),
    sealSession: (sid, ttlMs) => sealJson(ring, 'session', sid, ttlMs, now().getTime()),
    openSession: (v) => open('session', v),
  };
}
