/**
 * The requests of this domain the failed-authentication limiter counts (core/http/auth-failures.ts):
 * client authentication at the routes whose policy names this target (token, revocation, device
 * authorization), per claimed client id.
 */
import type { Context } from 'koa';
import type { FailedAuthTarget } from '../core/http/auth-failures.ts';
import { firstValue, formDecode } from '../core/http/params.ts';

/** The client id a token or revocation request claims: HTTP Basic, `client_id`, or an assertion's `sub`. */
export function claimedClientId(ctx: Context): string | undefined {
  const auth = ctx.get('authorization');
  const m = /^basic\s+(\S+)/i.exec(auth);
  if (m) {
    const raw = Buffer.from(m[1] as string, 'base64').toString('utf8');
    const i = raw.indexOf(':');
    return formDecode(i < 0 ? raw : raw.slice(0, i));
  }
  const body = (ctx.request.body ?? {}) as Record<string, unknown>;
  const id = firstValue(body.client_id);
  if (typeof id === 'string' && id) return id;
  const assertion = firstValue(body.client_assertion);
  if (typeof assertion === 'string') {
    try {
      const payload = JSON.parse(Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString('utf8')) as unknown;
      const sub = (payload as { sub?: unknown })?.sub;
      if (typeof sub === 'string' && sub) return sub;
    } catch {
      // not a JWT: counted per address only
    }
  }
  return undefined;
}

/** The limiter's target on the routes that declare it (token, revocation, device authorization). */
export const oauth2FailedAuthTarget: FailedAuthTarget = (ctx) => ({ kind: 'oauth2', credential: claimedClientId(ctx) });
