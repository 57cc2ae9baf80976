/**
 * OpenID Connect Dynamic Client Registration (RFC 7591) and its management protocol (RFC 7592), as
 * Hydra runs them: off unless `oidc.dynamic_client_registration.enabled`; the caller proves itself
 * only with the registration access token (⚠ Hydra's spec text mentions client credentials, its code
 * uses the token alone); every PUT rotates that token. Unlike Hydra, a registrant cannot choose
 * token lifespans, and its scope and audience are bounded by configuration (validate.ts,
 * `checkDynamicBounds`).
 */

import { verifyOpaqueToken } from '../../core/crypto/hmac.ts';
import { safeEqual } from '../../core/crypto/random.ts';
import { AppError, forbidden, notFound } from '../../core/errors.ts';
import type { OAuth2Deps } from '../deps.ts';
import * as store from '../store/clients.ts';
import type { Client, ClientDraft } from './model.ts';
import { clientBody, decodeBody, toDraft } from './schemas.ts';
import type { ClientService, WrittenClient } from './service.ts';

export type RegistrationService = ReturnType<typeof createRegistrationService>;

const unauthorized = () =>
  new AppError({
    status: 401,
    code: 'The request could not be authorized',
    description: 'The requested OAuth 2.0 client does not exist or you provided incorrect credentials.',
  });

export function createRegistrationService(core: Pick<OAuth2Deps, 'db' | 'config'>, clients: ClientService) {
  const { db, config } = core;

  /** @throws 404 with Hydra's body when dynamic registration is off */
  function assertEnabled(): void {
    if (!config.oidc.dynamic_client_registration.enabled) throw notFound('Dynamic registration is not enabled.');
  }

  /** The client the registration access token belongs to. @throws 401 for a missing, wrong or foreign token or an unknown id */
  async function authenticate(id: string, token: string | undefined): Promise<Client> {
    const s = await store.findClientById(db, id);
    const signature = token ? verifyOpaqueToken('ory_at_', token, config.secrets.system) : undefined;
    if (!s?.registrationSignature || !signature || !safeEqual(signature, s.registrationSignature)) {
      throw unauthorized();
    }
    return s.client;
  }

  /** POST /oauth2/register: a new client with a generated id and secret. */
  function register(draft: ClientDraft): Promise<WrittenClient> {
    assertEnabled();
    return clients.create(draft, { dynamic: true });
  }

  /** GET /oauth2/register/{id}. */
  async function get(id: string, token: string | undefined): Promise<Client> {
    assertEnabled();
    return authenticate(id, token);
  }

  /**
   * PUT /oauth2/register/{id}: full replacement under the dynamic rules, keeping the secret, with a
   * new registration access token (the old one stops working).
   * The body is decoded only after the token checks out, so a stranger learns nothing from a 400.
   * @throws 401, 403 when a secret is sent, 400 validation errors
   */
  async function replace(id: string, token: string | undefined, body: unknown): Promise<WrittenClient> {
    assertEnabled();
    const client = await authenticate(id, token);
    const draft = toDraft(decodeBody(clientBody, body));
    if (draft.client_secret) throw forbidden('It is not allowed to choose your own OAuth2 Client secret.');
    const reg = clients.newRegistrationToken();
    const written = await clients.replace(client.client_id, draft, {
      dynamic: true,
      registrationSignature: reg.signature,
      current: client,
    });
    return { client: written.client, registrationToken: reg.token };
  }

  /** DELETE /oauth2/register/{id}. */
  async function remove(id: string, token: string | undefined): Promise<void> {
    assertEnabled();
    const client = await authenticate(id, token);
    await clients.remove(client.client_id);
  }

  return { assertEnabled, register, get, replace, remove };
}
