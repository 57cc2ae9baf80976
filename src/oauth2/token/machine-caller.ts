/**
 * Access tokens as credentials of a machine calling gatehouse itself (the admin API's
 * `serve.admin.auth.tokens`): found as introspection finds them (opaque by HMAC signature, JWTs once
 * they verify), active and unexpired, issued through `client_credentials` (so they stand for the
 * client, never for a user who consented to a scope), and presented as a plain bearer token (a
 * DPoP-bound token needs its proof, RFC 9449 §7.1, which a bearer header does not carry).
 */
import type { Clock } from '../../core/clock.ts';
import type { SessionCodec } from '../session-data.ts';
import type { TokenLookup } from './lookup.ts';
import type { GrantSession } from './session.ts';

export interface MachineCallerDeps {
  clock: Clock;
  lookup: TokenLookup;
  sessions: SessionCodec;
}

/** The client and granted scope of `token` when it is an active client_credentials access token; else undefined. */
export function createMachineCallers(d: MachineCallerDeps) {
  return async function machineCaller(token: string): Promise<{ clientId: string; scope: string[] } | undefined> {
    const found = await d.lookup.find(token, false, { cached: true });
    if (found?.use !== 'access_token') return undefined;
    const { row } = found;
    if (row.expiresAt && row.expiresAt.getTime() <= d.clock.now().getTime()) return undefined;
    const session = d.sessions.open<GrantSession>(row.sessionData);
    if (session.machine !== 'client_credentials' || session.cnf) return undefined;
    return { clientId: row.clientId, scope: row.grantedScope };
  };
}

export type MachineCallers = ReturnType<typeof createMachineCallers>;
