/**
 * A client's public keys (request objects, private_key_jwt assertions): its registered `jwks`, or
 * the set published at its `jwks_uri`, fetched through the guarded outbound client.
 */
import type { JWK } from 'jose';
import { SafeFetchError, type SafeFetch } from '../core/safe-fetch.ts';
import type { FlowClient } from './ports.ts';

export class ClientKeysError extends Error {
  override name = 'ClientKeysError';
}

export async function clientKeys(fetch: SafeFetch, client: FlowClient): Promise<{ keys: JWK[] }> {
  if (client.jwks?.keys?.length) return { keys: client.jwks.keys };
  if (!client.jwksUri) {
    throw new ClientKeysError(
      'The OAuth 2.0 Client has no JSON Web Keys set registered, but they are needed to complete the request.',
    );
  }
  try {
    const r = await fetch(client.jwksUri, { headers: { accept: 'application/json' } });
    if (r.status !== 200) throw new ClientKeysError(`Unable to fetch the client's jwks_uri: it answered ${r.status}.`);
    const body = r.json<{ keys?: unknown }>();
    if (!Array.isArray(body.keys))
      throw new ClientKeysError("The client's jwks_uri did not return a JSON Web Key Set.");
    return { keys: body.keys as JWK[] };
  } catch (e) {
    if (e instanceof ClientKeysError) throw e;
    if (e instanceof SafeFetchError) throw new ClientKeysError(`Unable to fetch the client's jwks_uri: ${e.message}`);
    throw e;
  }
}
