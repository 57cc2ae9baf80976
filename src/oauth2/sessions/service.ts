/**
 * Consent sessions and login sessions on the admin API (Hydra's `/admin/oauth2/auth/sessions`): list a subject's consents,
 * revoke consents (and every token issued under them), forget a subject's login sessions.
 */
import type { Kysely } from 'kysely';
import type { Audit } from '../../core/audit/events.ts';
import type { Clock } from '../../core/clock.ts';
import { paginationSecrets } from '../../core/config/load.ts';
import { keyRing } from '../../core/crypto/keys.ts';
import { withTx } from '../../core/db/tx.ts';
import type { Logger } from '../../core/log.ts';
import { keysetPage, type Page, parsePageQuery } from '../../core/pagination.ts';
import type { OAuth2Config } from '../deps.ts';
import type { LogoutChannels } from '../logout/channels.ts';
import { oauth2Error } from '../oauth-errors.ts';
import type { ClientPort, FlowClient } from '../ports.ts';
import type { SessionCodec } from '../session-data.ts';
import { type ConsentFlow, type ConsentSelector, deleteConsentFlows, listConsentFlows } from '../store/flows.ts';
import { countLoginSessions, deleteLoginSession, deleteLoginSessionBatch } from '../store/sessions.ts';
import { deleteTokensOfRequests, deleteTokensOfSubject, type TokenChanges } from '../store/tokens.ts';
import type { Database } from '../tables.ts';
import { consentSessionView } from './schemas.ts';

export interface SessionsDeps {
  config: OAuth2Config;
  clock: Clock;
  db: Kysely<Database>;
  clients: ClientPort;
  sessions: SessionCodec;
  /** Back-channel notifications of ended sessions (enqueued in the deleting transaction). */
  channels: LogoutChannels;
  log: Logger;
  /** Records audit events (rows with `audit.enabled`). */
  audit: Audit;
  /** Announces the access tokens it deletes (store/tokens.ts). */
  changes: TokenChanges;
}

export interface LoginSessionRevocation {
  /** Sessions deleted by this call. */
  deleted: number;
  /** Back-channel notifications enqueued. */
  notified: number;
  /** False when the caller went away before every session was deleted (repeat the call to finish). */
  complete: boolean;
}

const PAGE_KIND = 'consent-sessions';

export interface RevokeConsentQuery {
  subject?: string | undefined;
  client?: string | undefined;
  consentRequestId?: string | undefined;
  all: boolean;
}

/** Hydra accepts exactly three combinations. */
function selector(q: RevokeConsentQuery): ConsentSelector {
  const { subject, client, consentRequestId, all } = q;
  if (consentRequestId && !subject && !client) return { consentRequestId };
  if (!consentRequestId && subject && client && !all) return { subject, clientId: client };
  if (!consentRequestId && subject && !client && all) return { subject };
  throw oauth2Error('invalid_request', { hint: 'Invalid combination of query parameters.' });
}

/**
 * Login and consent sessions of a subject: listing, and revoking them (with the logout channels of
 * the sessions that end).
 * Long: listing and both revocations share the paging key and the batched deletion of a subject's
 * sessions.
 */
export function createSessionsService(d: SessionsDeps) {
  const ring = keyRing(paginationSecrets(d.config), 'pagination');
  const log = d.log.child({ component: 'sessions' });

  async function revokeSubjectSessions(
    subject: string,
    signal?: AbortSignal,
    onBatch?: (deleted: number) => void,
  ): Promise<LoginSessionRevocation> {
    const size = d.config.oauth2.session_revocation.batch_size;
    const out = { deleted: 0, notified: 0, batches: 0 };
    // Batches go in session id order; each starts after the last id the previous one deleted.
    let after = '';
    let swept = false;
    for (;;) {
      if (signal?.aborted) {
        log.info(out, 'login session revocation stopped: the request was cancelled; repeat it to finish');
        return { deleted: out.deleted, notified: out.notified, complete: false };
      }
      const from = after;
      const batch = await withTx(d.db, async (trx) => {
        const { ids, clients } = await deleteLoginSessionBatch(trx, subject, from, size);
        if (ids.length)
          await d.audit.record(trx, {
            type: 'oauth2.sessions.revoked',
            target: { kind: 'subject', id: subject },
            details: { sessions: ids.length },
          });
        return { ids, notified: (await d.channels.clientsNotified(trx, clients)).backchannel };
      });
      if (!batch.ids.length) {
        // Nothing after the last id: once more from the start, for sessions with a lower id created
        // meanwhile. (A concurrent call taking rows ahead of this one only makes batches smaller.)
        if (after === '' || swept) break;
        swept = true;
        after = '';
        continue;
      }
      after = batch.ids.at(-1) as string;
      out.deleted += batch.ids.length;
      out.notified += batch.notified;
      out.batches++;
      onBatch?.(batch.ids.length);
    }
    log.info(out, 'login sessions revoked');
    return { deleted: out.deleted, notified: out.notified, complete: true };
  }

  return {
    /** Handled, non-skipped, unexpired consents of a subject, keyset-paginated by consent request id. */
    async listConsentSessions(
      subject: string | undefined,
      loginSessionId: string | undefined,
      query: Record<string, string | string[] | undefined>,
    ): Promise<Page<ReturnType<typeof consentSessionView>>> {
      if (!subject) {
        throw oauth2Error('invalid_request', {
          hint: "Query parameter 'subject' is not defined but should have been.",
        });
      }
      const now = d.clock.now();
      const page = await parsePageQuery(query, ring, PAGE_KIND, now);
      const rows: ConsentFlow[] = await listConsentFlows(d.db, {
        subject,
        loginSessionId,
        after: page.after ? String(page.after.id) : undefined,
        limit: page.size + 1,
        now,
      });
      const p = await keysetPage(ring, PAGE_KIND, page.size, rows, (last) => ({ id: last.consentRequestId }), now);
      const clients = new Map<string, FlowClient | undefined>();
      for (const id of new Set(p.items.map((r) => r.clientId))) clients.set(id, await d.clients.get(id));
      return { ...p, items: p.items.map((r) => consentSessionView(r, clients.get(r.clientId), d.sessions)) };
    },

    /** Deletes the selected consents and every access and refresh token issued under them. */
    async revokeConsentSessions(q: RevokeConsentQuery): Promise<void> {
      const sel = selector(q);
      await withTx(d.db, async (trx) => {
        const ids = await deleteConsentFlows(trx, sel);
        // A consent request id names a grant family even when its row was discarded (skipped consent).
        if ('consentRequestId' in sel && !ids.includes(sel.consentRequestId)) ids.push(sel.consentRequestId);
        await deleteTokensOfRequests(trx, ids, d.changes);
        // Consents discarded by `feature_flags.discard_skipped_consents` have no row to find.
        if ('subject' in sel) await deleteTokensOfSubject(trx, d.changes, sel.subject, sel.clientId);
        await d.audit.record(trx, {
          type: 'oauth2.consent.revoked',
          target:
            'subject' in sel ? { kind: 'subject', id: sel.subject } : { kind: 'consent', id: sel.consentRequestId },
          details: { client: 'clientId' in sel ? sel.clientId : undefined, consents: ids.length },
        });
      });
    },

    /**
     * `DELETE …/sessions/login?subject=` deletes every login session of the subject in bounded
     * batches (`oauth2.session_revocation.batch_size`), each batch its own short transaction that
     * also enqueues the back-channel notifications of the sessions it removed. Between batches the
     * call stops when `signal` aborts (the client went away): what was deleted stays deleted and a
     * repeated call finishes the job. `?sid=` (headless logout) deletes that one session and
     * notifies every client of it over the back-channel. Tokens are kept. @throws 400 without either
     */
    /** How many login sessions a subject has (progress output). */
    countLoginSessions: (subject: string) => countLoginSessions(d.db, subject),

    async revokeLoginSessions(
      subject: string | undefined,
      sid: string | undefined,
      signal?: AbortSignal,
      /** Called after each committed batch of a subject's sessions (progress output). */
      onBatch?: (deleted: number) => void,
    ): Promise<LoginSessionRevocation> {
      if (!subject && !sid) {
        throw oauth2Error('invalid_request', {
          hint: "Either 'subject' or 'sid' query parameters need to be defined.",
        });
      }
      if (sid) {
        const notified = await withTx(d.db, async (trx) => {
          if (!(await deleteLoginSession(trx, sid))) return undefined;
          await d.audit.record(trx, { type: 'oauth2.sessions.revoked', target: { kind: 'session', id: sid } });
          return (await d.channels.sessionsEnded(trx, [sid])).backchannel;
        });
        return { deleted: notified === undefined ? 0 : 1, notified: notified ?? 0, complete: true };
      }
      return revokeSubjectSessions(subject as string, signal, onBatch);
    },
  };
}

export type SessionsService = ReturnType<typeof createSessionsService>;
