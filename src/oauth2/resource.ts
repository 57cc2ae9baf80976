/**
 * Resource indicators (RFC 8707): `resource` names where an access token is to be used. Each value
 * is an absolute URI without a fragment (§2); the client's `audience` list is the allow-list (as
 * Hydra's audience whitelist). At the authorization endpoint and for client_credentials the
 * resources join the requested audience; at the token endpoint a code, device code or refresh token
 * exchange may narrow the access token to some of the resources its grant holds (§2.2), while a
 * refresh token keeps the whole grant. Every refusal is `invalid_target`.
 */
import { oauth2Error } from './oauth-errors.ts';
import type { FlowClient } from './ports.ts';
import { firstDisallowedAudience, splitSpaces } from './scope.ts';

/** The `resource` values (repeated parameters arrive joined with spaces), each checked (§2). */
export function parseResources(raw: string | undefined): string[] {
  const out: string[] = [];
  for (const r of splitSpaces(raw)) {
    let u: URL;
    try {
      u = new URL(r);
    } catch {
      throw oauth2Error('invalid_target', { hint: `The resource '${r}' is not an absolute URI (RFC 8707 §2).` });
    }
    if (u.hash || r.includes('#'))
      throw oauth2Error('invalid_target', { hint: `The resource '${r}' has a fragment (RFC 8707 §2).` });
    if (!out.includes(r)) out.push(r);
  }
  return out;
}

/** Resources the client may ask for: each within its `audience` list. */
export function allowedResources(client: FlowClient, raw: string | undefined): string[] {
  const resources = parseResources(raw);
  const bad = firstDisallowedAudience(client.audience, resources);
  if (bad !== undefined) {
    throw oauth2Error('invalid_target', {
      hint: `The OAuth 2.0 Client may not ask for resource '${bad}'.`,
    });
  }
  return resources;
}

/**
 * The audience an exchanged access token is narrowed to (§2.2): the resources asked for, each
 * within the grant's audience; undefined when none was asked for (the whole grant).
 */
export function narrowedAudience(granted: readonly string[], raw: string | undefined): string[] | undefined {
  const resources = parseResources(raw);
  if (!resources.length) return undefined;
  const bad = firstDisallowedAudience(granted, resources);
  if (bad !== undefined) {
    throw oauth2Error('invalid_target', {
      hint: `The resource '${bad}' is not part of the grant.`,
    });
  }
  return resources;
}

/** `accessTokenAudience` of a grant narrowed by the request's `resource`, or nothing. */
export function narrowing(granted: readonly string[], raw: string | undefined): { accessTokenAudience?: string[] } {
  const narrowed = narrowedAudience(granted, raw);
  return narrowed ? { accessTokenAudience: narrowed } : {};
}
