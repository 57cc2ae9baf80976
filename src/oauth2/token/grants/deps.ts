/** What the grant handlers need, and what they hand back. */
import type { Kysely } from 'kysely';
import type { Audit } from '../../../core/audit/events.ts';
import type { Clock } from '../../../core/clock.ts';
import type { OAuth2Config } from '../../deps.ts';
import type { SessionCodec } from '../../session-data.ts';
import type { PlanOutcome } from '../../store/token-plan.ts';
import type { TokenChanges } from '../../store/tokens.ts';
import type { Database } from '../../tables.ts';
import type { TrustService } from '../../trust/service.ts';
import type { IssuedTokens, TokenIssuer } from '../issue.ts';
import type { TokenLookup } from '../lookup.ts';

export interface GrantDeps {
  config: OAuth2Config;
  clock: Clock;
  db: Kysely<Database>;
  sessions: SessionCodec;
  issuer: TokenIssuer;
  /** Audit events of issuance and reuse; whether it writes rows picks how a plan is stored. */
  audit: Audit;
  /** Trusted JWT-bearer issuers and their keys (RFC 7523 grant). */
  trust: Pick<TrustService, 'keysFor'>;
  /** Accepted `aud` values of assertions: the public token URL and the issuer-derived one. */
  tokenUrls: readonly string[];
  /** Announces deletions of access tokens (a replayed code revokes its grant): the process's change feed. */
  changes: TokenChanges;
  /** Finds presented tokens (token exchange's subject and actor tokens). */
  lookup: Pick<TokenLookup, 'find'>;
}

/**
 * A grant's checks passed: the answer and the plan of its rows, which the token service stores
 * (store/token-plan.ts `persistPlan`). `refused` turns an outcome other than `stored` into the
 * error to answer (after what that outcome needs, e.g. revoking a replayed code's tokens); a plan
 * that spends nothing is always stored, unless the DPoP proof it came with was replayed (which the
 * token service answers).
 */
export interface GrantPlan extends IssuedTokens {
  refused?(outcome: Exclude<PlanOutcome, 'stored' | 'replayed'>): Promise<Error>;
}
