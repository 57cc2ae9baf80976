/**
 * The OAuth 2.0 domain's part of the configuration: Hydra's `urls` (the login, consent, logout,
 * error and device pages), `ttl`, `strategies`, `oauth2`, `oidc`, `webfinger`, `feature_flags` and
 * `clients`, and gatehouse's `dev_ui`, `janitor` and `db.jwk_cache`; their checks, and their
 * defaults derived from the listeners' addresses. The face exports the part; the composition root
 * registers it (src/config.ts).
 */
import { z } from 'zod';
import { bool, type ConfigPart, dur, hook, int, leaf, list, oneOf, str, url } from '../core/config/schema.ts';
import { checkMtlsConfig } from './mtls-config.ts';

/** A test user of the development login page (`dev_ui.users`). */
const devUser = z.strictObject({
  subject: z.string().min(1),
  password: z.string().min(1),
  claims: z.record(z.string(), z.unknown()).default({}),
});
export type DevUser = z.output<typeof devUser>;
/** The test user of the development login page when `dev_ui.users` is empty. */
export const DEFAULT_DEV_USERS = [
  {
    subject: 'ada@example.com',
    password: 'gatehouse-dev',
    claims: { name: 'Ada Lovelace', email: 'ada@example.com', email_verified: true },
  },
];

/** The asymmetric JWS algorithms a DPoP proof may be signed with (RFC 9449 §4.2). */
export const DPOP_ALGS = ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512', 'EdDSA'];

const oauth2Spec = {
  dev_ui: {
    enabled: leaf(
      'bool',
      z.boolean().optional(),
      'Serve the development login, consent, logout and device verification pages under `/dev/` on the public listener (see OAuth 2.0: Development login and consent app). With any `dsn` other than `memory` it is refused unless `dev: true` is also set.',
      '(on only with `dsn: memory`)',
    ),
    users: leaf(
      'string',
      z
        .union([z.string(), z.array(devUser)])
        .transform((v, ctx): DevUser[] | undefined => {
          if (typeof v !== 'string') return v;
          if (v.trim() === '') return undefined;
          let json: unknown;
          try {
            json = JSON.parse(v);
          } catch {
            ctx.addIssue({ code: 'custom', message: 'expected a JSON list of {subject, password, claims}' });
            return z.NEVER;
          }
          const r = z.array(devUser).safeParse(json);
          if (r.success) return r.data;
          for (const i of r.error.issues) ctx.addIssue({ code: 'custom', message: i.message, path: i.path });
          return z.NEVER;
        })
        .prefault(''),
      'Test users of the development login page: a list of `{subject, password, claims}` (in the environment: the same list as JSON). Empty: one user, `ada@example.com` with password `gatehouse-dev` and a name and e-mail claim.',
      '""',
      { secret: true },
    ),
  },
  urls: {
    login: url('Login UI.', '`<public>/oauth2/fallbacks/login`'),
    registration: url('Registration UI (prompt=registration).', '= urls.login'),
    consent: url('Consent UI.', '`<public>/oauth2/fallbacks/consent`'),
    logout: url('Logout UI.', '`<public>/oauth2/fallbacks/logout`'),
    error: url('Error page.', '`<public>/oauth2/fallbacks/error`'),
    post_logout_redirect: url('Default target after logout.', '`<public>/oauth2/fallbacks/logout/callback`'),
    device: {
      verification: url(
        'Device verification UI: asks for the user code (gets `device_challenge`).',
        '`<public>/oauth2/fallbacks/device`',
      ),
      success: url('Shown after a device was authorized.', '`<public>/oauth2/fallbacks/device/done`'),
    },
  },
  ttl: {
    login_consent_request: dur('30m', 'Lifetime of login and consent challenges.'),
    access_token: dur('1h', 'Access token lifetime.'),
    refresh_token: dur('720h', 'Refresh token lifetime (`-1`: never expires).'),
    id_token: dur('1h', 'ID token lifetime.'),
    auth_code: dur('10m', 'Authorization code lifetime.'),
    authentication_session: dur('720h', 'Remembered login session lifetime (at most 180 days).'),
    vc_nonce: dur('1h', 'Lifetime of the `c_nonce` a verifiable-credential proof must carry.'),
    device_user_code: dur('10m', 'Lifetime of device codes and user codes (device authorization grant).'),
  },
  strategies: {
    access_token: oneOf(['opaque', 'jwt'], 'opaque', 'Access token format; a client’s `access_token_strategy` wins.'),
    scope: oneOf(['wildcard', 'exact'], 'wildcard', 'Scope matching strategy.'),
    jwt: {
      scope_claim: oneOf(
        ['list', 'string', 'both'],
        'list',
        'JWT access tokens carry scopes as `scp` (list), `scope` (string) or both.',
      ),
      stateless: {
        enabled: bool(
          false,
          'Issue self-contained JWT access tokens and write no token row; introspection, revocation and userinfo then answer 501.',
        ),
        claim_name: str('stateless', 'Top-level claim that marks a stateless JWT access token.'),
      },
    },
  },
  oauth2: {
    preserve_ext_claims: bool(false, 'With `mirror_top_level_claims` off, keep non-promoted custom claims in `ext`.'),
    mirror_top_level_claims: bool(true, 'Mirror promoted custom claims into `ext` as well.'),
    allowed_top_level_claims: list([], 'Custom claims promoted to the top level of JWT access tokens.'),
    exclude_not_before_claim: bool(false, 'Leave `nbf` out of JWT access tokens.'),
    expose_internal_errors: bool(false, 'Append debug text to `error_description`.'),
    pkce: {
      enforced: bool(false, 'Require PKCE for every client.'),
      enforced_for_public_clients: bool(false, 'Require PKCE for public clients.'),
      allow_plain: bool(
        false,
        'Accept `code_challenge_method=plain` (and a challenge without a method, which means `plain`, RFC 7636 §4.3) and advertise it in discovery. Off, as in Hydra: only `S256` (RFC 7636 §4.2, §7.2).',
      ),
    },
    dpop: {
      enabled: bool(
        true,
        'Accept DPoP proofs (RFC 9449) at the token endpoint and bind the access tokens they ask for to the proof’s key; advertise `dpop_signing_alg_values_supported`.',
      ),
      signing_algs: list(
        ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512', 'EdDSA'],
        'JWS algorithms a DPoP proof may use (asymmetric only).',
      ),
      proof_lifetime: dur(
        '60s',
        'How long after its `iat` a DPoP proof is accepted (and its `jti` remembered); 5 s of clock skew either way come on top.',
      ),
      use_nonce: bool(
        false,
        'Require a server-provided nonce in every DPoP proof (RFC 9449 §8): a proof without the current one is answered `use_dpop_nonce` with a `DPoP-Nonce` header. Nonces change every 5 minutes and are valid for two windows.',
      ),
    },
    mtls: {
      enabled: bool(
        false,
        'Mutual-TLS client authentication and certificate-bound access tokens (RFC 8705). Has effect only where client certificates can arrive: where the public listener serves TLS (it then asks for a client certificate without requiring one) or with `oauth2.mtls.trusted_proxy.header`. Advertised in discovery only then. Off by default: a listener that asks for certificates makes some browsers offer the user a certificate chooser on the login pages’ redirects, so turn it on where machine clients connect (or behind a proxy that asks only on a host of its own).',
      ),
      ca: str(
        '',
        'PEM of the certificate authorities that issue clients’ certificates for `tls_client_auth` (the chain is checked by the TLS listener, or against these for a certificate a trusted proxy forwards). Empty: no certificate is PKI-verified, so only `self_signed_tls_client_auth` works.',
      ),
      trusted_proxy: {
        header: str(
          '',
          'Request header in which a TLS-terminating proxy forwards the client certificate, URL-encoded PEM (nginx: `proxy_set_header X-SSL-Client-Cert $ssl_client_escaped_cert;`). Believed only from `oauth2.mtls.trusted_proxy.addresses`; the proxy must overwrite the header on every request. Empty: off.',
        ),
        addresses: list(
          [],
          'Addresses (IPs or CIDRs) of the proxies whose `oauth2.mtls.trusted_proxy.header` is believed; the header from any other address is ignored.',
        ),
      },
    },
    pushed_authorization_requests: {
      enabled: bool(
        true,
        'Serve `POST /oauth2/par` (pushed authorization requests, RFC 9126) and advertise it in discovery.',
      ),
      required: bool(
        false,
        'Every authorization request must be pushed first (RFC 9126 §5): `/oauth2/auth` then takes only a `request_uri` from `/oauth2/par`. Per client: `require_pushed_authorization_requests`.',
      ),
      ttl: dur(
        '60s',
        'How long a pushed request’s `request_uri` may start an authorization (RFC 9126 §2.2 `expires_in`; at most 10m). It starts one flow only.',
      ),
    },
    grant: {
      refresh_token: {
        rotation_grace_period: dur(
          '0s',
          'Grace period in which a rotated refresh token may be reused (at most 5m; at most 180 days when a reuse count is set).',
        ),
        rotation_grace_reuse_count: int(
          0,
          'How many times a rotated refresh token may be reused within the grace period (0: unlimited within a 5m period).',
        ),
      },
      jwt: {
        jti_optional: bool(false, 'JWT bearer assertions may omit `jti`.'),
        iat_optional: bool(false, 'JWT bearer assertions may omit `iat`.'),
        max_ttl: dur('720h', 'Maximum lifetime of a JWT bearer assertion.'),
      },
    },
    client_credentials: {
      default_grant_allowed_scope: bool(
        false,
        'Grant all client scopes when a client_credentials request asks for none.',
      ),
    },
    hashers: {
      algorithm: oneOf(['pbkdf2', 'bcrypt'], 'pbkdf2', 'Client secret hasher.'),
      pbkdf2: { iterations: int(25000, 'PBKDF2-SHA256 iterations.', 1) },
      bcrypt: { cost: int(10, 'bcrypt cost.', 4, 31) },
    },
    session: { encrypt_at_rest: bool(true, 'Encrypt session data (claims) at rest.') },
    client_jwks: {
      cache_ttl: dur(
        '5m',
        "How long a client's key set fetched from its `jwks_uri` (private_key_jwt, request objects) is reused.",
      ),
      min_refetch_interval: dur(
        '30s',
        "Least time between two fetches of one client's `jwks_uri` (a failure is remembered this long; an unknown `kid` refetches at most this often).",
      ),
    },
    client_assertion: {
      max_ttl: dur('1h', 'Refuse private_key_jwt client assertions whose `exp` is further than this in the future.'),
    },
    session_revocation: {
      batch_size: int(
        1000,
        'Login sessions deleted per transaction by `DELETE /admin/oauth2/auth/sessions/login?subject=` (each batch commits on its own).',
        1,
        100_000,
      ),
    },
    backchannel_logout: {
      max_attempts: int(
        10,
        'Delivery attempts of one back-channel logout notification before its job is left failed.',
        1,
      ),
      timeout: dur('10s', 'Timeout of one back-channel logout request.'),
    },
    device_authorization: {
      token_polling_interval: dur(
        '5s',
        'Minimum interval between two polls of one device code (`interval`; faster polls get `slow_down`).',
      ),
      user_code: {
        entropy_preset: oneOf(
          ['high', 'medium', 'low'],
          'high',
          'User code length and alphabet: `high` 8 of 50 unambiguous letters and digits, `medium` 8 upper-case letters, `low` 9 digits.',
        ),
        length: int(0, 'User code length (at least 6; 0: the preset’s).'),
        character_set: str('', 'User code alphabet (at least 8 characters; empty: the preset’s).'),
      },
    },
    token_hook: hook(
      'Token hook: called before the token endpoint issues tokens (every grant); its answer replaces the custom claims (see Tokens). A URL, or `{url, auth: {type: api_key, config: {in: header|cookie, name, value}}}` (in the environment as JSON); off when empty.',
      { secret: true },
    ),
  },
  oidc: {
    subject_identifiers: {
      supported_types: list(['public'], 'Subject identifier types (`public`, `pairwise`).'),
      pairwise: { salt: str('', 'Salt for pairwise subjects (at least 8 characters).', { secret: true }) },
    },
    dynamic_client_registration: {
      enabled: bool(false, 'Enable OpenID Connect dynamic client registration on the public listener.'),
      default_scope: list(['offline_access', 'offline', 'openid'], 'Scope of clients created without one.'),
      allow_internal_addresses: bool(
        false,
        'Let dynamically registered clients point `jwks_uri`, `request_uris`, `backchannel_logout_uri` and `sector_identifier_uri` at internal addresses (refused by default, at registration and at every request; `clients.http.private_ip_exception_urls` exempts single URLs).',
      ),
      allowed_scope: leaf(
        'list',
        z.array(z.string()).optional(),
        'Scope values a dynamically registered client may ask for in `scope` (exact values; anything else is refused with `invalid_client_metadata`). Unset: the values of `default_scope`. The admin API is not bounded by it.',
        '(`default_scope`)',
      ),
      allowed_audience: list(
        [],
        'Audiences a dynamically registered client may list in `audience` (exact values; anything else is refused with `invalid_client_metadata`). Empty: none. The admin API is not bounded by it.',
      ),
    },
  },
  webfinger: {
    jwks: { broadcast_keys: list(['hydra.openid.id-token'], 'Key sets published at /.well-known/jwks.json.') },
    oidc_discovery: {
      client_registration_url: url('`registration_endpoint` in discovery (omitted when empty).', '""'),
      supported_claims: list([], 'Extra `claims_supported`.'),
      supported_scope: list([], 'Extra `scopes_supported`.'),
      auth_url: url('Override of `authorization_endpoint`.', '""'),
      token_url: url('Override of `token_endpoint`.', '""'),
      jwks_url: url('Override of `jwks_uri`.', '""'),
      userinfo_url: url('Override of `userinfo_endpoint`.', '""'),
      device_authorization_url: url('Override of `device_authorization_endpoint`.', '""'),
      verifiable_credentials_url: url('Override of `credentials_endpoint_draft_00`.', '""'),
    },
  },
  feature_flags: {
    discard_skipped_consents: bool(
      false,
      'Do not store skipped consents (only an identifier, briefly); front- and back-channel logout then do not work.',
    ),
  },
  clients: {
    http: {
      disallow_private_ip_ranges: bool(
        false,
        'Refuse outbound requests (jwks_uri, sector_identifier_uri, request_uri, back-channel logout, token hook) to internal addresses (see Security).',
      ),
      private_ip_exception_urls: list(
        [],
        'URLs exempt from the private-address refusal, matched on scheme, host, port and path (query ignored); `*` matches within one path segment.',
      ),
    },
  },
  db: {
    jwk_cache: {
      enabled: bool(
        false,
        'TTL cache of JSON Web Keys, per process, used while the process cannot listen for key changes (connection lost, CockroachDB); while it listens, keys are kept until a change is notified whatever this says.',
      ),
      size: int(1000, 'Maximum number of cached keys (whole sets are cached; a set larger than this is not).', 1),
      ttl: dur(
        '1m',
        'Time-to-live of cached key sets: how long a key change made elsewhere can go unseen. Set one; `0` keeps entries until evicted (not recommended).',
      ),
    },
  },
  janitor: {
    batch_size: int(100, 'Rows deleted per janitor transaction.', 1),
    limit: int(10000, 'Rows a janitor run selects per target before it re-enqueues itself.', 1),
  },
};

const FIVE_MINUTES = 5 * 60_000;
/** Claims of JWT access tokens that the stateless marker claim may not replace. */
const RESERVED_JWT_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'client_id', 'scp', 'scope', 'ext'];
const DAY = 86_400_000;

export const OAUTH2_CONFIG: ConfigPart<typeof oauth2Spec> = {
  spec: oauth2Spec,
  notImplemented: ['oauth2.refresh_token_hook'],
  check(c) {
    const out: string[] = [];
    const grace = c.oauth2.grant.refresh_token.rotation_grace_period;
    const reuse = c.oauth2.grant.refresh_token.rotation_grace_reuse_count;
    if (grace < 0) out.push('oauth2.grant.refresh_token.rotation_grace_period: must not be negative');
    else if (reuse > 0 && grace > 180 * DAY) {
      out.push('oauth2.grant.refresh_token.rotation_grace_period: must be at most 180 days (4320h)');
    } else if (reuse === 0 && grace > FIVE_MINUTES) {
      out.push(
        'oauth2.grant.refresh_token.rotation_grace_period: must be at most 5m unless oauth2.grant.refresh_token.rotation_grace_reuse_count is set (then at most 180 days)',
      );
    }
    const claim = c.strategies.jwt.stateless.claim_name;
    if (!claim || RESERVED_JWT_CLAIMS.includes(claim)) {
      out.push(
        `strategies.jwt.stateless.claim_name: must be a non-empty claim name other than ${RESERVED_JWT_CLAIMS.join(', ')}`,
      );
    }
    if (c.ttl.authentication_session > 180 * DAY)
      out.push('ttl.authentication_session: must be at most 180 days (4320h)');
    for (const key of [
      'login_consent_request',
      'access_token',
      'id_token',
      'auth_code',
      'authentication_session',
      'device_user_code',
      'vc_nonce',
    ] as const) {
      if (c.ttl[key] <= 0) out.push(`ttl.${key}: must be a positive duration`);
    }
    const dpop = c.oauth2.dpop;
    const badAlg = dpop.signing_algs.find((a) => !DPOP_ALGS.includes(a));
    if (badAlg !== undefined)
      out.push(`oauth2.dpop.signing_algs: '${badAlg}' is not an asymmetric JWS algorithm (${DPOP_ALGS.join(', ')})`);
    if (dpop.enabled && !dpop.signing_algs.length) out.push('oauth2.dpop.signing_algs: must not be empty');
    if (dpop.proof_lifetime <= 0 || dpop.proof_lifetime > 10 * 60_000)
      out.push('oauth2.dpop.proof_lifetime: must be a positive duration of at most 10m');
    out.push(...checkMtlsConfig(c.oauth2.mtls));
    const par = c.oauth2.pushed_authorization_requests;
    if (par.ttl <= 0 || par.ttl > 10 * 60_000)
      out.push('oauth2.pushed_authorization_requests.ttl: must be a positive duration of at most 10m');
    if (par.required && !par.enabled)
      out.push('oauth2.pushed_authorization_requests.required: needs oauth2.pushed_authorization_requests.enabled');
    const uc = c.oauth2.device_authorization.user_code;
    if (uc.length !== 0 && uc.length < 6) out.push('oauth2.device_authorization.user_code.length: must be at least 6');
    if (uc.character_set !== '' && new Set(uc.character_set).size < 8) {
      out.push('oauth2.device_authorization.user_code.character_set: must hold at least 8 distinct characters');
    }
    if (c.oauth2.device_authorization.token_polling_interval < 1000) {
      out.push('oauth2.device_authorization.token_polling_interval: must be at least 1s');
    }
    if (c.dev_ui.enabled === true && c.dsn !== 'memory' && !c.dev) {
      out.push(
        'dev_ui.enabled: the development login app accepts fixed test passwords; it is refused with a dsn other than memory unless dev: true is also set',
      );
    }
    const salt = c.oidc.subject_identifiers.pairwise.salt;
    if (c.oidc.subject_identifiers.supported_types.includes('pairwise') && salt.length < 8) {
      out.push(
        'oidc.subject_identifiers.pairwise.salt: must be at least 8 characters when pairwise subjects are supported',
      );
    }
    for (const t of c.oidc.subject_identifiers.supported_types) {
      if (t !== 'public' && t !== 'pairwise')
        out.push(`oidc.subject_identifiers.supported_types: unknown type ${JSON.stringify(t)}`);
    }
    return out;
  },
  derive(m) {
    const c = { ...m };
    const devUi = c.dev_ui.enabled ?? c.dsn === 'memory';
    m.dev_ui = { enabled: devUi, users: c.dev_ui.users ?? DEFAULT_DEV_USERS };
    // With the development login app on, the UI URLs default to its pages instead of the fallbacks.
    const fallback = (p: string) =>
      new URL(
        devUi && ['login', 'consent', 'logout', 'device', 'device/done'].includes(p)
          ? `dev/${p}`
          : `oauth2/fallbacks/${p}`,
        c.urls.self.public,
      ).toString();
    m.urls = {
      ...c.urls,
      login: c.urls.login || fallback('login'),
      registration: c.urls.registration || c.urls.login || fallback('login'),
      consent: c.urls.consent || fallback('consent'),
      logout: c.urls.logout || fallback('logout'),
      error: c.urls.error || fallback('error'),
      post_logout_redirect: c.urls.post_logout_redirect || fallback('logout/callback'),
      device: {
        verification: c.urls.device.verification || fallback('device'),
        success: c.urls.device.success || fallback('device/done'),
      },
    };
  },
};
