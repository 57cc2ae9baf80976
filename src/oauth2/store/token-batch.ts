/**
 * Rows the token endpoint writes outside a transaction, grouped with those of concurrent requests
 * (group-commit.ts): lone access-token rows (the machine grants without audit rows), the `jti`s
 * of DPoP proofs and client assertions that must be used once, and lone access-token rows together
 * with the `jti` of the DPoP proof they were issued on.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../tables.ts';
import { perHandle } from './group-commit.ts';
import {
  insertAccessToken,
  insertAccessTokens,
  insertAccessTokensWithJtis,
  insertJti,
  insertJtis,
  type JtiRow,
  type TokenRecord,
} from './tokens.ts';

type Row = TokenRecord & { expiresAt: Date };

const accessTokens = perHandle((db: Kysely<Database>) => ({
  one: (row: Row) => insertAccessToken(db, row),
  many: async (rows: Row[]) => {
    await insertAccessTokens(db, rows);
    return rows.map(() => undefined);
  },
}));

/** Writes an access-token row outside any transaction, grouped with concurrent ones. */
export function insertAccessTokenGrouped(db: Kysely<Database>, row: Row): Promise<void> {
  return accessTokens(db).submit(row);
}

const jtis = perHandle((db: Kysely<Database>) => ({
  one: (row: JtiRow) => insertJti(db, row.signature, row.expiresAt, row.now),
  many: (rows: JtiRow[]) => insertJtis(db, rows),
}));

/**
 * Records a `jti` (by its hash) until `expiresAt`, grouped with concurrent ones; false when it is
 * already known and unexpired (see insertJti).
 */
export function insertJtiGrouped(
  db: Kysely<Database>,
  signature: string,
  expiresAt: Date,
  now: Date,
): Promise<boolean> {
  return jtis(db).submit({ signature, expiresAt, now });
}

const tokensWithJtis = perHandle((db: Kysely<Database>) => ({
  one: async (row: { token: Row; jti: JtiRow }) => (await insertAccessTokensWithJtis(db, [row]))[0] === true,
  many: (rows: Array<{ token: Row; jti: JtiRow }>) => insertAccessTokensWithJtis(db, rows),
}));

/**
 * Records `jti` and writes the access-token row issued on it, in one statement grouped with
 * concurrent ones (see insertAccessTokensWithJtis); false when the jti is already known and
 * unexpired, and then no row was written.
 */
export function insertAccessTokenWithJtiGrouped(db: Kysely<Database>, token: Row, jti: JtiRow): Promise<boolean> {
  return tokensWithJtis(db).submit({ token, jti });
}
