/**
 * Trust relationships for the RFC 7523 JWT bearer grant (Hydra's trust package, `/admin/trust/grants/jwt-bearer/issuers`): an
 * issuer, a subject (or any subject), the scopes its assertions may request, a public key and an
 * expiry. The key is stored in the JSON Web Key set named after the issuer.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Audit } from '../../core/audit/events.ts';
import type { Clock } from '../../core/clock.ts';
import { paginationSecrets } from '../../core/config/load.ts';
import { keyRing } from '../../core/crypto/keys.ts';
import { withTx } from '../../core/db/tx.ts';
import { AppError, badRequest, HERODOT, notFound } from '../../core/errors.ts';
import { keysetPage, type Page, parsePageQuery } from '../../core/pagination.ts';
import type { OAuth2Config } from '../deps.ts';
import { invalidJwkReason, type Jwk, normaliseJwk, toPublicJwk } from '../jwk/keys.ts';
import type { KeySealer } from '../jwk/sealed.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { deleteKey, findKey, insertKeys } from '../store/jwks.ts';
import {
  countIssuersOfKey,
  deleteTrustedIssuer,
  findTrustedIssuer,
  findTrustKeys,
  insertTrustedIssuer,
  listTrustedIssuers,
  type TrustedIssuer,
} from '../store/trust.ts';
import type { Database } from '../tables.ts';
import type { TrustBody } from './schemas.ts';

export interface TrustDeps {
  db: Kysely<Database>;
  clock: Clock;
  config: OAuth2Config;
  sealer: KeySealer;
  /** Records audit events (rows with `audit.enabled`). */
  audit: Audit;
}

/** A key an assertion may be verified with, and the relationship it belongs to. */
export interface TrustKey {
  issuer: TrustedIssuer;
  jwk: Jwk;
}

const PAGE_KIND = 'trust-jwt-bearer-issuers';
/** `jwk_keys.sid` / `kid` are VARCHAR(255): the issuer names the key set. */
const MAX_NAME = 255;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const missing = (hint: string) => oauth2Error('missing_required_parameter', { hint });
const decodeError = (description: string) => new AppError({ status: 400, code: 'error', description });
const roundToSecond = (d: Date) => new Date(Math.round(d.getTime() / 1000) * 1000);

/** Hydra's validateGrant, in its order, then the key itself. */
function validate(b: TrustBody): { jwk: Jwk & { kid: string }; expiresAt: Date } {
  if (!b.issuer) throw missing("Field 'issuer' is required.");
  if (!b.subject && !b.allow_any_subject) throw missing("One of 'subject' or 'allow_any_subject' field must be set.");
  if (b.subject && b.allow_any_subject) {
    throw missing("Both 'subject' and 'allow_any_subject' fields cannot be set at the same time.");
  }
  if (!b.expires_at || b.expires_at.getTime() <= Date.UTC(1, 0, 1)) throw missing("Field 'expires_at' is required.");
  const kid = typeof b.jwk.kid === 'string' ? b.jwk.kid : '';
  if (!kid) throw missing("Field 'jwk' must contain JWK with kid header.");
  if (b.issuer.length > MAX_NAME || kid.length > MAX_NAME) {
    throw decodeError(`The issuer and the key id must be at most ${MAX_NAME} characters long.`);
  }
  const jwk = normaliseJwk(b.jwk);
  const reason = invalidJwkReason(jwk) ?? (jwk.kty === 'oct' ? 'a trusted key must be an asymmetric key' : undefined);
  if (reason) throw decodeError(`Unable to decode the request body: ${reason}`);
  // Only the public part is needed to verify assertions; private members are never kept.
  return { jwk: { ...(toPublicJwk(jwk) as Jwk), kid }, expiresAt: b.expires_at };
}

function parseId(id: string): string {
  if (!UUID.test(id)) throw badRequest(`Unable to parse parameter id: invalid UUID ${JSON.stringify(id)}`);
  return id.toLowerCase();
}

const dbNotFound = () => notFound('', HERODOT.dbNotFound);

export function createTrustService(d: TrustDeps) {
  const ring = () => keyRing(paginationSecrets(d.config), 'pagination');

  return {
    /** @throws 400 missing_required_parameter / decode errors, 409 duplicate (issuer, subject, kid) */
    async create(body: TrustBody): Promise<TrustedIssuer> {
      const { jwk, expiresAt } = validate(body);
      const now = d.clock.now();
      const grant: TrustedIssuer = {
        id: randomUUID(),
        issuer: body.issuer,
        subject: body.subject,
        allowAnySubject: body.allow_any_subject,
        scope: body.scope,
        keySet: body.issuer,
        keyId: jwk.kid,
        createdAt: roundToSecond(now),
        expiresAt: roundToSecond(expiresAt),
      };
      await withTx(d.db, async (trx) => {
        // As Hydra: a key already stored under (issuer, kid) is reused.
        if (!(await findKey(trx, grant.keySet, grant.keyId))) {
          await insertKeys(trx, [d.sealer.seal(grant.keySet, jwk, now)]);
        }
        await insertTrustedIssuer(trx, grant);
        await d.audit.record(trx, {
          type: 'oauth2.trust.changed',
          target: { kind: 'trust', id: grant.id },
          details: { change: 'created', issuer: grant.issuer, scope: grant.scope },
        });
      });
      return grant;
    },

    /** @throws 400 non-UUID id, 404 unknown */
    async get(id: string): Promise<TrustedIssuer> {
      const t = await findTrustedIssuer(d.db, parseId(id));
      if (!t) throw dbNotFound();
      return t;
    },

    /** Keyset pages ordered by id, optionally for one issuer. @throws 400 bad page parameters */
    async list(query: Record<string, string | string[] | undefined>, issuer?: string): Promise<Page<TrustedIssuer>> {
      const now = d.clock.now();
      const keys = ring();
      const page = await parsePageQuery(query, keys, PAGE_KIND, now);
      const after = page.after?.id;
      const rows = await listTrustedIssuers(d.db, {
        issuer,
        afterId: typeof after === 'string' ? after : undefined,
        limit: page.size + 1,
      });
      return keysetPage(keys, PAGE_KIND, page.size, rows, (last) => ({ id: last.id }), now);
    },

    /**
     * Deletes the relationship and its stored key. A key that another relationship still uses is
     * kept (deleting it would cascade to that relationship too).
     * @throws 400 non-UUID id, 404 unknown
     */
    async remove(id: string): Promise<void> {
      const key = parseId(id);
      await withTx(d.db, async (trx) => {
        const t = await deleteTrustedIssuer(trx, key);
        if (!t) throw dbNotFound();
        if ((await countIssuersOfKey(trx, t.keySet, t.keyId)) === 0) await deleteKey(trx, t.keySet, t.keyId);
        await d.audit.record(trx, {
          type: 'oauth2.trust.changed',
          target: { kind: 'trust', id: key },
          details: { change: 'deleted', issuer: t.issuer },
        });
      });
    },

    /** Unexpired keys trusted for (iss, sub): the one named `kid`, or all of them (newest first). */
    async keysFor(issuer: string, subject: string, kid: string | undefined): Promise<TrustKey[]> {
      const rows = await findTrustKeys(d.db, { issuer, subject, kid, now: d.clock.now() });
      return rows.map((r) => ({ issuer: r.issuer, jwk: d.sealer.open(r.key) }));
    },
  };
}

export type TrustService = ReturnType<typeof createTrustService>;
