/**
 * RFC 7009 revocation (Hydra's revokeOAuth2Token) and the admin deletion of a client's
 * access tokens (deleteOAuth2Token); see https://www.ory.sh/docs/hydra/reference/api.
 *
 * Revoking an access or a refresh token deletes every access and refresh token of its grant
 * (request id). The answer is the same for a revoked, unknown or expired token and for a token of
 * another client (silently ignored): only a bad request or failed client authentication is an error,
 * and those carry the bare RFC description (no hint). A used refresh token outside the grace rules
 * counts as unknown, as in Hydra.
 */

import type { Audit } from '../../core/audit/events.ts';
import type { Clock } from '../../core/clock.ts';
import { withTx } from '../../core/db/tx.ts';
import { AppError } from '../../core/errors.ts';
import type { OAuth2Config } from '../deps.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { deleteAccessTokensOfClient } from '../store/token-families.ts';
import { announceRevocation, deleteTokensOfRequests, type TokenChanges } from '../store/tokens.ts';
import type { Db } from '../tables.ts';
import { authenticateClient, type ClientAuthDeps, type ClientCredentialsInput } from '../token/client-auth.ts';
import type { TokenLookup } from '../token/lookup.ts';
import { gracePolicyOf, refreshTokenUsable } from '../token/rotation.ts';
import { assertStatefulTokens } from '../token/stateless.ts';

export interface RevocationDeps {
  config: OAuth2Config;
  clock: Clock;
  db: Db;
  lookup: TokenLookup;
  clientAuth: ClientAuthDeps;
  /** Records audit events (rows with `audit.enabled`). */
  audit: Audit;
  /** Announces the access tokens it deletes (store/tokens.ts). */
  changes: TokenChanges;
}

export function createRevocationService(d: RevocationDeps) {
  /** The calling client, or undefined when authentication failed with an error Hydra answers 200 to. */
  async function caller(input: ClientCredentialsInput) {
    try {
      return await authenticateClient(d.clientAuth, input);
    } catch (e) {
      if (e instanceof AppError && (e.code === 'invalid_request' || e.code === 'invalid_client')) {
        throw oauth2Error(e.code);
      }
      if (e instanceof AppError && e.status < 500) return undefined;
      throw e;
    }
  }

  return {
    /** @throws 501 (stateless JWTs), 400 `invalid_request`, 401 `invalid_client` */
    async revoke(input: ClientCredentialsInput): Promise<void> {
      assertStatefulTokens(d.config, 'revocation');
      if (!Object.keys(input.form).length) throw oauth2Error('invalid_request');
      const client = await caller(input);
      if (!client) return;
      const found = await d.lookup.find(input.form.token ?? '', input.form.token_type_hint !== 'access_token');
      if (!found || found.row.clientId !== client.id) return;
      if (found.use === 'refresh_token' && !refreshTokenUsable(found.row, d.clock.now(), gracePolicyOf(d.config))) {
        return;
      }
      await withTx(d.db, async (trx) => {
        await deleteTokensOfRequests(trx, [found.row.requestId], d.changes);
        await d.audit.record(trx, {
          type: 'oauth2.tokens.revoked',
          actor: { kind: 'client', id: client.id },
          target: { kind: 'grant', id: found.row.requestId },
          details: { token_type: found.use },
        });
      });
      // Again once committed: an introspection that read the row meanwhile must not keep it.
      announceRevocation(d.changes);
    },

    /** Deletes the client's access tokens; refresh tokens stay (Hydra). @throws 400 without client_id */
    async deleteClientAccessTokens(clientId: string | undefined): Promise<void> {
      if (!clientId) {
        throw oauth2Error('invalid_request', {
          hint: "Query parameter 'client_id' is not defined but it should have been.",
        });
      }
      await withTx(d.db, async (trx) => {
        await deleteAccessTokensOfClient(trx, clientId, d.changes);
        await d.audit.record(trx, { type: 'oauth2.tokens.revoked', target: { kind: 'client', id: clientId } });
      });
      announceRevocation(d.changes);
    },
  };
}

export type RevocationService = ReturnType<typeof createRevocationService>;
