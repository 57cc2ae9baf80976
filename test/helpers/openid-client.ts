/** openid-client as a relying party of a test server: discovery with client_secret_basic over plain HTTP. */
import * as oidc from 'openid-client';
import type { TestServer } from './apps.ts';
import type { CreatedClient } from './oauth2.ts';

export const discoverAs = (t: TestServer, client: CreatedClient) =>
  oidc.discovery(
    new URL(t.container.config.urls.self.issuer),
    client.client_id,
    undefined,
    oidc.ClientSecretBasic(client.client_secret as string),
    { execute: [oidc.allowInsecureRequests] },
  );
