/**
 * Server-side records of operator console sessions (`console_sessions`, sql/0250): the sealed
 * `gatehouse_console` cookie carries a random session id (256 bits), and a session is valid only
 * while its row exists and has not expired, so sign-out, "sign out everywhere" and
 * `gatehouse revoke console-sessions` end it at once, wherever its cookie was copied to (OWASP
 * Session Management Cheat Sheet: "Session Expiration", "Manual Session Expiration").
 *
 * Only the SHA-256 digest of an id is stored (the id is a random 256-bit value, so a digest cannot
 * be reversed or guessed): a read of the table, a backup or a log of its statements yields no
 * usable session. A request reads one row by primary key; `last_seen_at` is written at most once a
 * minute per session. Expired rows are deleted at each sign-in (at most 1000 a time, through the
 * `expires_at` index): there are few operators and sign-ins, so the table stays small without a
 * scheduled job.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../core/clock.ts';
import type { Db } from './tables.ts';

/** How often `last_seen_at` is brought up to date (ms). */
const SEEN_EVERY_MS = 60_000;
/** Expired rows deleted per sign-in. */
const CLEANUP_BATCH = 1000;

/** The stored key of a session id: its SHA-256 digest (base64url). */
export const sessionDigest = (id: string) => createHash('sha256').update(id).digest('base64url');

/** Ends every console session of `subject`; returns how many there were. */
export async function revokeConsoleSessions(db: Db, subject: string): Promise<number> {
  const r = await db.deleteFrom('console_sessions').where('subject', '=', subject).executeTakeFirst();
  return Number(r.numDeletedRows);
}

export function createConsoleSessions(db: Db, clock: Clock) {
  return {
    /** Records a new session of `subject` lasting `ttlSec`; returns its id (for the cookie only). */
    async create(subject: string, ttlSec: number): Promise<{ id: string; expiresAt: Date }> {
      const now = clock.now();
      const id = randomBytes(32).toString('base64url');
      const expiresAt = new Date(now.getTime() + ttlSec * 1000);
      await db
        .deleteFrom('console_sessions')
        .where(
          'id_hash',
          'in',
          db.selectFrom('console_sessions').select('id_hash').where('expires_at', '<', now).limit(CLEANUP_BATCH),
        )
        .execute();
      await db
        .insertInto('console_sessions')
        .values({ id_hash: sessionDigest(id), subject, created_at: now, last_seen_at: now, expires_at: expiresAt })
        .execute();
      return { id, expiresAt };
    },

    /** The session's subject and expiry while its row exists and has not expired. */
    async find(id: string): Promise<{ subject: string; expiresAt: Date } | undefined> {
      const key = sessionDigest(id);
      const row = await db
        .selectFrom('console_sessions')
        .select(['subject', 'expires_at', 'last_seen_at'])
        .where('id_hash', '=', key)
        .executeTakeFirst();
      const now = clock.now();
      if (!row || row.expires_at.getTime() <= now.getTime()) return undefined;
      if (now.getTime() - row.last_seen_at.getTime() >= SEEN_EVERY_MS) {
        await db.updateTable('console_sessions').set({ last_seen_at: now }).where('id_hash', '=', key).execute();
      }
      return { subject: row.subject, expiresAt: row.expires_at };
    },

    /** Ends one session (its row goes). */
    async end(id: string): Promise<void> {
      await db.deleteFrom('console_sessions').where('id_hash', '=', sessionDigest(id)).execute();
    },

    /** Ends every session of `subject`. */
    endAll: (subject: string) => revokeConsoleSessions(db, subject),
  };
}
