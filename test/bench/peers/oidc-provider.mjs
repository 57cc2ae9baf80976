/**
 * Peer: node-oidc-provider with its in-memory adapter and one `client_secret_basic` client allowed
 * client_credentials; introspection on; two resource servers so that one process issues both
 * opaque tokens (no `resource`) and JWT ES256 access tokens (`resource=urn:bench:jwt`); for the
 * authorization-code flow a second client (`authorization_code` + `refresh_token`) and a bench-only
 * route that finishes login and consent interactions (below); DPoP on. Its settings otherwise are
 * the library's defaults. IPC as in jackson.mjs.
 */

import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const es256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
// ID tokens are signed RS256 on both sides with a key of the same size: gatehouse's default, as
// Hydra's, is a 4096-bit RSA key, whose signature costs about six times a 2048-bit one's.
const rs256 = generateKeyPairSync('rsa', { modulusLength: 4096 }).privateKey.export({ format: 'jwk' });

export const CLIENT = { client_id: 'bench', client_secret: 'bench-secret-0123456789abcdef0123' };
/** The authorization-code client (test/bench/scenarios/flows.ts). */
export const CODE_CLIENT = { client_id: 'bench-code', client_secret: 'bench-code-secret-0123456789abcdef' };

let issuerPort = 0;
const srv = createServer();
await new Promise((r) => srv.listen(0, '127.0.0.1', r));
issuerPort = srv.address().port;

const provider = new Provider(`http://127.0.0.1:${issuerPort}`, {
  clients: [
    {
      ...CLIENT,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'read write',
    },
    {
      ...CODE_CLIENT,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1:9/cb'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  jwks: {
    keys: [
      { ...rs256, kid: 'rs', use: 'sig' },
      { ...es256, kid: 'es', use: 'sig', alg: 'ES256' },
    ],
  },
  scopes: ['openid', 'offline_access', 'read', 'write'],
  features: {
    clientCredentials: { enabled: true },
    // RFC 9449, for the DPoP scenario (the library's default, stated: the scenario depends on it).
    dPoP: { enabled: true },
    introspection: { enabled: true },
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => false,
      getResourceServerInfo: (_ctx, resource) => {
        if (resource === 'urn:bench:jwt') {
          return { scope: 'read write', accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } };
        }
        if (resource === 'urn:bench:opaque') return { scope: 'read write', accessTokenFormat: 'opaque' };
        throw new Provider.errors.InvalidTarget();
      },
    },
  },
});
provider.proxy = false;
const callback = provider.callback();
/**
 * Bench-only, the peer's counterpart of gatehouse's login and consent accept calls (the headless
 * login and consent app): `POST /bench/interaction/:uid` finishes the pending prompt of that
 * interaction — login as `bench-user`, or consent granting the requested OIDC scopes — and answers
 * `{ returnTo }`, where the browser resumes the authorization.
 */
async function finishInteraction(uid, res) {
  const interaction = await provider.Interaction.find(uid);
  if (!interaction) {
    res.writeHead(404).end();
    return;
  }
  if (interaction.prompt.name === 'login') {
    interaction.result = { login: { accountId: 'bench-user' } };
  } else {
    const grant = new provider.Grant({
      accountId: interaction.session.accountId,
      clientId: interaction.params.client_id,
    });
    grant.addOIDCScope(String(interaction.params.scope));
    interaction.result = { consent: { grantId: await grant.save() } };
  }
  await interaction.save(interaction.exp - Math.floor(Date.now() / 1000));
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ returnTo: interaction.returnTo }));
}
srv.on('request', (req, res) => {
  const m = req.method === 'POST' && /^\/bench\/interaction\/([\w-]+)$/.exec(req.url ?? '');
  if (!m) return callback(req, res);
  req.resume();
  finishInteraction(m[1], res).catch(() => res.writeHead(500).end());
});
srv.keepAliveTimeout = 60_000;
process.send?.({ type: 'ready', url: `http://127.0.0.1:${issuerPort}` });
process.on('message', (m) => {
  if (m?.type === 'stats') process.send?.({ type: 'stats', rss: process.memoryUsage().rss, queries: 0 });
  if (m?.type === 'stop') {
    srv.closeAllConnections();
    srv.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 3000).unref();
  }
});
