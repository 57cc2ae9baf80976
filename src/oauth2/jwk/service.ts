/**
 * JSON Web Key sets on the admin API (Hydra's jwk manager, `/admin/keys`; RFC 7517). Admin reads
 * and writes go straight to the database; after a write this process drops its cache entry for
 * the set (other processes pick the change up when their entry's TTL runs out).
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Audit } from '../../core/audit/events.ts';
import type { Clock } from '../../core/clock.ts';
import { withTx } from '../../core/db/tx.ts';
import { AppError, badRequest, HERODOT, notFound } from '../../core/errors.ts';
import { deleteKey, deleteSet, findKey, insertKeys, listKeys, listSets } from '../store/jwks.ts';
import type { Database, Executor } from '../tables.ts';
import { defaultUseOf, generateJwk, isSupportedAlg } from './generate.ts';
import { invalidJwkReason, type Jwk, type Jwks, normaliseJwk } from './keys.ts';
import type { KeyProvider } from './provider.ts';
import type { KeySealer } from './sealed.ts';

export interface CreateKeyInput {
  alg: string;
  use?: string | undefined;
  kid?: string | undefined;
}

export interface JwkService {
  /** Generates one key and adds it to the set as its newest key. Throws 400 (unsupported alg), 409 (kid taken). */
  createKeySet(set: string, input: CreateKeyInput): Promise<Jwks>;
  /** Throws 404 when the set has no keys. */
  getKeySet(set: string): Promise<Jwks>;
  /** Throws 404 when the key does not exist. */
  getKey(set: string, kid: string): Promise<Jwks>;
  /** Replaces the whole set; the first key of the body becomes the newest. Throws 400, 409 (duplicate kid). */
  setKeySet(set: string, body: Record<string, unknown>[]): Promise<Jwks>;
  /** Replaces (or adds) the key named by the body's kid (the path kid when the body has none). Throws 400. */
  setKey(set: string, pathKid: string, body: Record<string, unknown>): Promise<Jwk>;
  deleteKeySet(set: string): Promise<void>;
  /** The sets that hold keys, by name, with their key counts. */
  listSets(): Promise<{ sid: string; keys: number }[]>;
  deleteKey(set: string, kid: string): Promise<void>;
}

export interface JwkServiceDeps {
  db: Kysely<Database>;
  sealer: KeySealer;
  clock: Clock;
  provider: KeyProvider;
  /** Records audit events (rows with `audit.enabled`). */
  audit: Audit;
}

const MAX_ID = 255;

function checkName(what: string, v: string): void {
  if (!v || v.length > MAX_ID) throw badRequest(`The ${what} must be 1 to ${MAX_ID} characters long.`);
}

const unsupportedAlg = () =>
  new AppError({ status: 400, code: 'Bad Request', description: 'Unsupported key algorithm' });
const setNotFound = () =>
  new AppError({ status: 404, code: 'Not Found', description: 'Unable to locate the requested resource' });

/** Normalises and validates one JWK from a request body; `fallbackKid` fills a missing kid. */
function parseJwk(raw: Record<string, unknown>, fallbackKid?: string): Jwk & { kid: string } {
  const jwk = normaliseJwk(raw);
  const reason = invalidJwkReason(jwk);
  if (reason) throw badRequest(`Unable to decode the request body: ${reason}`);
  const kid = jwk.kid ?? fallbackKid;
  if (!kid) throw badRequest('Unable to decode the request body: every JSON Web Key needs a kid');
  checkName('kid', kid);
  return { ...jwk, kid };
}

export function createJwkService(d: JwkServiceDeps): JwkService {
  const changed = (exec: Executor, set: string, change: string, kid?: string) =>
    d.audit.record(exec, {
      type: 'oauth2.jwk.set_changed',
      target: { kind: 'key_set', id: set },
      details: { change, kid },
    });
  const openAll = async (set: string) => (await listKeys(d.db, set)).map((r) => d.sealer.open(r));

  return {
    async createKeySet(set, input) {
      checkName('set', set);
      if (!isSupportedAlg(input.alg)) throw unsupportedAlg();
      const use = input.use || defaultUseOf(input.alg);
      if (use !== 'sig' && use !== 'enc') throw badRequest('The use must be sig or enc.');
      const kid = input.kid || randomUUID();
      checkName('kid', kid);
      const jwk = (await generateJwk(input.alg, { kid, use })) as Jwk & { kid: string };
      await withTx(d.db, async (trx) => {
        await insertKeys(trx, [d.sealer.seal(set, jwk, d.clock.now())]);
        await changed(trx, set, 'key_generated', kid);
      });
      d.provider.forget(set);
      return { keys: [jwk] };
    },

    async getKeySet(set) {
      const keys = await openAll(set);
      if (!keys.length) throw setNotFound();
      return { keys };
    },

    async getKey(set, kid) {
      const row = await findKey(d.db, set, kid);
      if (!row) throw notFound('', HERODOT.dbNotFound);
      return { keys: [d.sealer.open(row)] };
    },

    async setKeySet(set, body) {
      checkName('set', set);
      const keys = body.map((k) => parseJwk(k));
      const kids = new Set(keys.map((k) => k.kid));
      if (kids.size !== keys.length) throw badRequest('Unable to decode the request body: two keys share a kid');
      const now = d.clock.now();
      // Inserted last-to-first so that the first key of the body is the newest (and signs).
      const rows = [...keys].reverse().map((k) => d.sealer.seal(set, k, now));
      await withTx(d.db, async (trx) => {
        await deleteSet(trx, set);
        await insertKeys(trx, rows);
        await changed(trx, set, 'set_replaced');
      });
      d.provider.forget(set);
      return { keys };
    },

    async setKey(set, pathKid, body) {
      checkName('set', set);
      const jwk = parseJwk(body, pathKid);
      await withTx(d.db, async (trx) => {
        await deleteKey(trx, set, jwk.kid);
        await insertKeys(trx, [d.sealer.seal(set, jwk, d.clock.now())]);
        await changed(trx, set, 'key_replaced', jwk.kid);
      });
      d.provider.forget(set);
      return jwk;
    },

    listSets: () => listSets(d.db),

    async deleteKeySet(set) {
      await withTx(d.db, async (trx) => {
        await deleteSet(trx, set);
        await changed(trx, set, 'set_deleted');
      });
      d.provider.forget(set);
    },

    async deleteKey(set, kid) {
      await withTx(d.db, async (trx) => {
        await deleteKey(trx, set, kid);
        await changed(trx, set, 'key_deleted', kid);
      });
      d.provider.forget(set);
    },
  };
}
