/**
 * The network rules of client validation (Hydra's validator, the parts that need the network):
 * - with `clients.http.disallow_private_ip_ranges`, `jwks_uri`, `backchannel_logout_uri`,
 *   `sector_identifier_uri` and every `request_uris` entry must not resolve to an internal address;
 * - `sector_identifier_uri` is fetched (through the guarded client) and must be a JSON array holding
 *   every redirect URI (OpenID Connect Core §8.1).
 * Messages never contain an address (the guarded client builds them address-free). For dynamic
 * registration (`opaqueErrors`), a failed sector_identifier_uri fetch is one fixed message that
 * names no status or cause, so an anonymous caller cannot use registration to probe targets.
 */
import { type SafeFetch, SafeFetchError } from '../../core/safe-fetch.ts';
import type { ClientDraft } from './model.ts';
import { invalidMetadata } from './validate.ts';

export async function checkClientOutbound(
  d: ClientDraft,
  fetch: SafeFetch,
  disallowPrivate: boolean,
  opts: { opaqueErrors?: boolean } = {},
): Promise<void> {
  if (disallowPrivate) {
    const targets: Array<[string, string]> = [
      ['jwks_uri', d.jwks_uri],
      ['backchannel_logout_uri', d.backchannel_logout_uri],
      ['sector_identifier_uri', d.sector_identifier_uri ?? ''],
      ...(d.request_uris ?? []).map((u): [string, string] => ['request_uris', u]),
    ];
    for (const [field, url] of targets) {
      if (!url) continue;
      try {
        await fetch.check(url);
      } catch (e) {
        // Only a refusal is a validation error: a name that does not resolve now is checked again at use.
        if (e instanceof SafeFetchError && e.code === 'blocked_address') {
          throw invalidMetadata(
            `The ${field} must not point to a private, loopback or otherwise internal address: ${e.message}`,
          );
        }
      }
    }
  }
  if (d.sector_identifier_uri) await checkSectorIdentifier(d, fetch, opts.opaqueErrors ?? false);
}

async function checkSectorIdentifier(d: ClientDraft, fetch: SafeFetch, opaque: boolean): Promise<void> {
  let list: unknown;
  const unreadable = (detail: string) =>
    invalidMetadata(
      opaque ? 'Unable to read the sector_identifier_uri.' : `Unable to read the sector_identifier_uri: ${detail}`,
    );
  try {
    const res = await fetch(d.sector_identifier_uri as string, { headers: { accept: 'application/json' } });
    if (res.status !== 200) throw unreadable(`it answered with status ${res.status}.`);
    list = res.json();
  } catch (e) {
    if (e instanceof SafeFetchError) throw unreadable(e.message);
    throw e;
  }
  if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) {
    throw invalidMetadata('The sector_identifier_uri must answer with a JSON array of redirect URIs.');
  }
  for (const r of d.redirect_uris ?? []) {
    if (!list.includes(r)) {
      throw invalidMetadata(`Redirect URL '${r}' does not match values of sector_identifier_uri.`);
    }
  }
}
