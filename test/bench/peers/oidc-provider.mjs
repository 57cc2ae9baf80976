/**
 * Peer: node-oidc-provider with its in-memory adapter and one `client_secret_basic` client allowed
 * client_credentials; introspection on; two resource servers so that one process issues both
 * opaque tokens (no `resource`) and JWT ES256 access tokens (`resource=urn:bench:jwt`). Its settings
 * otherwise are the library's defaults. IPC as in jackson.mjs.
 */
import { createServer } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const es256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
const rs256 = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });

export const CLIENT = { client_id: 'bench', client_secret: 'bench-secret-0123456789abcdef0123' };

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
  ],
  jwks: {
    keys: [
      { ...rs256, kid: 'rs', use: 'sig' },
      { ...es256, kid: 'es', use: 'sig', alg: 'ES256' },
    ],
  },
  scopes: ['openid', 'offline_access', 'read', 'write'],
  features: {
    clientCredentials: { enabled: true },
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
srv.on('request', provider.callback());
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
