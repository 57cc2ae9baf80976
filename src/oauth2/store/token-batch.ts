/**
 * Rows the token endpoint writes outside a transaction, grouped with those of concurrent requests
 * (group-commit.ts): lone access-token rows (the machine grants without audit rows), and the `jti`s
 * of DPoP proofs and client assertions that must be used once.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../tables.ts';
import { perHandle } from './group-commit.ts';
import {
  insertAccessToken,
  insertAccessTokens,
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
