/**
 * The `claims` request parameter (OpenID Connect Core §5.5): a JSON object whose `userinfo` and
 * `id_token` members name individual claims, each `null` or `{essential?, value?, values?}`.
 * It is checked here, shown to the login and consent apps (`oidc_context.claims`), and two of its
 * requests are enforced on the accepted login: a `sub` value (§3.1.2.2: only that user may answer)
 * and an essential `acr` with values (§5.5.1.1: otherwise the authentication failed).
 */
import { z } from 'zod';
import { oauth2Error } from '../../oauth-errors.ts';

/** Bound on the parameter (it travels in the sealed flow state and to the login and consent apps). */
export const MAX_CLAIMS_BYTES = 8192;

const claimRequest = z
  .strictObject({
    essential: z.boolean().optional(),
    value: z.unknown().optional(),
    values: z.array(z.unknown()).optional(),
  })
  .nullable();
const claimSet = z.record(z.string().min(1), claimRequest);
const claimsRequest = z.looseObject({ userinfo: claimSet.optional(), id_token: claimSet.optional() });

export type ClaimsRequest = z.output<typeof claimsRequest>;

const invalid = (why: string) =>
  oauth2Error('invalid_request', {
    hint: `The 'claims' parameter is not a valid claims request (OpenID Connect Core §5.5): ${why}.`,
  });

/** The parsed request, or undefined without one; `invalid_request` when it is not one. */
export function parseClaimsRequest(raw: string | undefined): ClaimsRequest | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (Buffer.byteLength(raw) > MAX_CLAIMS_BYTES) throw invalid(`it is larger than ${MAX_CLAIMS_BYTES} bytes`);
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw invalid('it is not JSON');
  }
  const r = claimsRequest.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw invalid(issue?.path.length ? `member ${issue.path.join('.')}: ${issue.message}` : 'expected a JSON object');
  }
  return r.data;
}

/** Every value the request allows for `claim` in either member (`value` and `values` together). */
function requestedValues(c: ClaimsRequest, claim: string): { values: unknown[]; essential: boolean } {
  const values: unknown[] = [];
  let essential = false;
  for (const member of [c.id_token, c.userinfo]) {
    const r = member?.[claim];
    if (!r) continue;
    if (r.value !== undefined) values.push(r.value);
    if (r.values) values.push(...r.values);
    essential ||= r.essential === true;
  }
  return { values, essential };
}

/** The accepted login against the claims request: `sub` and an essential `acr`. */
export function checkClaimsAgainstLogin(c: ClaimsRequest | undefined, sub: string, acr: string): void {
  if (!c) return;
  const subs = requestedValues(c, 'sub').values;
  if (subs.length && !subs.includes(sub)) {
    throw oauth2Error('login_required', {
      hint: "The subject of the login is not the one the 'claims' parameter asked for.",
    });
  }
  const acrs = requestedValues(c, 'acr');
  if (acrs.essential && acrs.values.length && !acrs.values.includes(acr)) {
    throw oauth2Error('access_denied', {
      hint: "The login's acr is none of the values the 'claims' parameter asked for as essential.",
    });
  }
}
