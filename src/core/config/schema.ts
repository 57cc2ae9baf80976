/**
 * The one configuration schema. Key paths follow Hydra's (`urls.self.issuer`, `ttl.access_token`,
 * `oauth2.grant.refresh_token.rotation_grace_period`, …) plus gatehouse's own (`db.*`, `worker.*`,
 * `dsync.*`). Each leaf maps to one environment variable: the path upper-cased with `.` → `_`
 * (`URLS_SELF_ISSUER`). The configuration table in docs/configuration.md is checked against `configLeaves()`.
 */
import { z } from 'zod';
import { parseDuration } from './duration.ts';

export type LeafKind = 'string' | 'int' | 'number' | 'bool' | 'duration' | 'seconds' | 'list' | 'enum' | 'url';

export interface Leaf<S extends z.ZodType = z.ZodType> {
  readonly leaf: true;
  kind: LeafKind;
  schema: S;
  description: string;
  /** Human readable default for docs/configuration.md. */
  defaultText: string;
  /** Extra environment variable names accepted for this key (Jackson's names). */
  aliases?: string[];
  secret?: boolean;
}

type SpecNode = Leaf | { [key: string]: SpecNode };
type LeafExtra = Pick<Leaf, 'aliases' | 'secret'>;

const durationSchema = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: `expected a duration like 1h, 30m or 10s, got ${JSON.stringify(v)}` });
    return z.NEVER;
  }
  return ms;
});

/** Jackson's intervals are plain numbers of seconds; a duration string is accepted as well. */
const secondsSchema = z.union([z.string(), z.number()]).transform((v, ctx) => {
  if (typeof v === 'number' || /^\d+$/.test(v.trim())) return Number(v) * 1000;
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: `expected seconds or a duration like 1h, got ${JSON.stringify(v)}` });
    return z.NEVER;
  }
  return ms;
});

const leaf = <S extends z.ZodType>(
  kind: LeafKind,
  schema: S,
  description: string,
  defaultText: string,
  extra: LeafExtra = {},
): Leaf<S> => ({
  leaf: true,
  kind,
  schema,
  description,
  defaultText,
  ...extra,
});

const str = (def: string, description: string, extra: LeafExtra = {}) =>
  leaf('string', z.string().default(def), description, def === '' ? '""' : def, extra);
const url = (description: string, defaultText = '(derived)', extra: LeafExtra = {}) =>
  leaf(
    'url',
    z
      .string()
      .default('')
      .refine((v) => v === '' || URL.canParse(v), { message: 'expected an absolute URL' }),
    description,
    defaultText,
    extra,
  );
/** Hydra's hook form: a URL, or `{url, auth: {type: api_key, config: {in, name, value}}}`. */
const hookObject = z.strictObject({
  url: z.string().refine((v) => URL.canParse(v), { message: 'expected an absolute URL' }),
  auth: z
    .strictObject({
      type: z.literal('api_key'),
      config: z.strictObject({
        in: z.enum(['header', 'cookie']),
        name: z.string().min(1),
        value: z.string(),
      }),
    })
    .optional(),
});
export type HookConfig = z.output<typeof hookObject>;
/** Off when empty; a string starting with `{` (an environment variable) is read as the JSON object form. */
const hook = (description: string, extra: LeafExtra = {}) =>
  leaf(
    'url',
    z
      .union([z.string(), hookObject])
      .transform((v, ctx): HookConfig | undefined => {
        if (typeof v !== 'string') return v;
        const s = v.trim();
        if (s === '') return undefined;
        if (!s.startsWith('{')) {
          if (URL.canParse(s)) return { url: s };
          ctx.addIssue({ code: 'custom', message: 'expected an absolute URL or {url, auth}' });
          return z.NEVER;
        }
        let json: unknown;
        try {
          json = JSON.parse(s);
        } catch {
          ctx.addIssue({ code: 'custom', message: 'expected an absolute URL or a JSON object {url, auth}' });
          return z.NEVER;
        }
        const r = hookObject.safeParse(json);
        if (r.success) return r.data;
        for (const i of r.error.issues) ctx.addIssue({ code: 'custom', message: i.message, path: i.path });
        return z.NEVER;
      })
      .prefault(''),
    description,
    '""',
    extra,
  );
/** A test user of the development login page (`dev_ui.users`). */
const devUser = z.strictObject({
  subject: z.string().min(1),
  password: z.string().min(1),
  claims: z.record(z.string(), z.unknown()).default({}),
});
export type DevUser = z.output<typeof devUser>;
const int = (def: number, description: string, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  leaf('int', z.number().int().min(min).max(max).default(def), description, String(def));
const bool = (def: boolean, description: string) => leaf('bool', z.boolean().default(def), description, String(def));
const dur = (def: string, description: string) => leaf('duration', durationSchema.prefault(def), description, def);
const secs = (def: string, description: string, extra: LeafExtra = {}) =>
  leaf('seconds', secondsSchema.prefault(def), description, def === '0' ? '0 (off)' : def, extra);
const list = (def: string[], description: string, extra: LeafExtra = {}, item: z.ZodType<string> = z.string()) =>
  leaf('list', z.array(item).default(def), description, JSON.stringify(def), extra);
const oneOf = <const T extends readonly [string, ...string[]]>(values: T, def: T[number], description: string) =>
  leaf('enum', z.enum(values).default(def as never), description, def);

/**
 * Hydra's TLS block (`serve.tls`, and per listener `serve.public.tls` / `serve.admin.tls`): a PEM
 * certificate and key, each from a file (`path`) or inline (`base64` of the PEM).
 */
const tlsBlock = (scope: 'shared' | 'public' | 'admin') => {
  const inherit = scope === 'shared' ? '' : ' (default: the one of `serve.tls`)';
  return {
    enabled: leaf(
      'bool',
      z.boolean().optional(),
      scope === 'shared'
        ? 'TLS on both listeners when a certificate and key are set; `false` serves plain HTTP even then.'
        : `Overrides \`serve.tls.enabled\` for the ${scope} listener.`,
      scope === 'shared' ? '(on when cert and key are set)' : '= serve.tls.enabled',
    ),
    cert: {
      path: str('', `PEM certificate (chain) file${inherit}; re-read on SIGHUP.`),
      base64: str('', `PEM certificate (chain), base64-encoded${inherit}.`),
    },
    key: {
      path: str('', `PEM private key file${inherit}; re-read on SIGHUP.`),
      base64: str('', `PEM private key, base64-encoded${inherit}.`, { secret: true }),
    },
  };
};
/** `serve.<listener>.cors`: Hydra's keys and defaults (rs/cors options). */
const cors = (listener: 'public' | 'admin') => ({
  enabled: bool(false, `Answer CORS requests on the ${listener} listener.`),
  allowed_origins: list(
    [],
    'Allowed origins (empty or `*`: every origin, answered with `Access-Control-Allow-Origin: *`). Matched by component: scheme and port exactly (or by their own `*`, `?`), a pattern without a port only origins without one; host label by label: `*` one whole label (`https://*.example.com`), `**` one or more, `?` one character, `{a,b}` alternatives; `https://*` any https origin. A `*` that is not a whole label is ignored (warned at start-up). An `Origin` over 1,024 bytes or 127 labels matches nothing.',
  ),
  allowed_methods: list(
    ['POST', 'GET', 'PUT', 'PATCH', 'DELETE', 'CONNECT', 'HEAD', 'OPTIONS', 'TRACE'],
    'Methods a cross-origin request may use.',
  ),
  allowed_headers: list(
    ['Accept', 'Content-Type', 'Content-Length', 'Accept-Language', 'Content-Language', 'Authorization'],
    'Request headers a cross-origin request may send.',
  ),
  exposed_headers: list(
    ['Cache-Control', 'Expires', 'Last-Modified', 'Pragma', 'Content-Length', 'Content-Language', 'Content-Type'],
    'Response headers the browser exposes to the calling script.',
  ),
  allow_credentials: bool(
    true,
    'Send `Access-Control-Allow-Credentials: true` with an allowed origin. Ignored (warned at start-up) while `allowed_origins` allows every origin: no credentials with `*`.',
  ),
  max_age: int(0, 'Seconds a preflight answer may be cached (`Access-Control-Max-Age`; 0: not sent).'),
  debug: bool(false, 'Log every CORS decision (debug level).'),
});

export const spec = {
  dsn: str(
    'memory',
    'Database: `postgres://…`, `postgresql://…`, `cockroach://…`, or `memory` (embedded PostgreSQL in `db.memory.dir`).',
    { secret: true },
  ),
  dev: bool(false, 'Development mode: allows an http issuer and insecure cookies.'),
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
  console: {
    enabled: leaf(
      'bool',
      z.boolean().optional(),
      'Serve the operator console under `/console` on the admin listener (see Operator console). It signs operators in as an OAuth 2.0 client of this server (`gatehouse-console`).',
      '(on when `console.operators` is not empty)',
    ),
    operators: list(
      [],
      'Subjects allowed to use the operator console. Empty with the development login app on (`dev_ui.enabled`): the subjects of `dev_ui.users` (by default `ada@example.com`).',
    ),
    session_ttl: dur(
      '1h',
      'Lifetime of an operator console session (its cookie); the operator signs in again after it.',
    ),
  },
  serve: {
    public: {
      port: int(4444, 'Public listener port (0 picks a free port).', 0, 65535),
      host: str('', 'Public listener interface (empty: all interfaces).'),
      tls: tlsBlock('public'),
      cors: cors('public'),
    },
    admin: {
      port: int(4445, 'Admin listener port (0 picks a free port).', 0, 65535),
      host: str('', 'Admin listener interface (empty: all interfaces).'),
      tls: tlsBlock('admin'),
      cors: cors('admin'),
    },
    tls: tlsBlock('shared'),
    cookies: {
      same_site_mode: oneOf(['Lax', 'Strict', 'None'], 'Lax', 'SameSite attribute of gatehouse cookies.'),
      domain: str('', 'Domain attribute of gatehouse cookies.'),
      secure: bool(true, 'Secure attribute of gatehouse cookies (always off with `dev: true`).'),
      paths: { session: str('/', 'Path of the login session cookie.') },
      names: {
        session: str('ory_hydra_session', 'Name of the login session cookie.'),
        login_csrf: str('ory_hydra_login_csrf', 'Name prefix of the login CSRF cookie.'),
        consent_csrf: str('ory_hydra_consent_csrf', 'Name prefix of the consent CSRF cookie.'),
        device_csrf: str('ory_hydra_device_csrf', 'Name of the device verification CSRF cookie.'),
      },
    },
    request_log: { disable_for_health: bool(true, 'Do not log requests to /health/*.') },
    limits: {
      body: {
        public: int(
          65536,
          'Largest request body in bytes on the public listener (OAuth 2.0 forms, dynamic registration); larger is 413 (see Security: Limits).',
          1024,
        ),
        admin: int(
          1048576,
          'Largest request body in bytes on the admin listener (admin API, directory sync API).',
          1024,
        ),
        scim: int(1048576, 'Largest SCIM request body in bytes (identity providers).', 1024),
      },
      url: int(8192, 'Longest request target (path and query) in bytes; longer is 414.', 256),
      headers: int(
        16384,
        'Largest size in bytes of the request line and headers together; larger is 431 (Node.js `maxHeaderSize`).',
        1024,
      ),
      request_object: int(
        65536,
        'Largest OpenID Connect request object (`request`, or what `request_uri` returns) in bytes; larger is `invalid_request_object`.',
        1024,
      ),
    },
  },
  urls: {
    self: {
      issuer: url('Issuer URL (`iss`).', 'http://localhost:4444/'),
      public: url('Public base URL of the authorization, token and logout endpoints.', '= issuer'),
      admin: url('Admin base URL.', 'http://localhost:4445/'),
    },
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
  secrets: {
    system: list(
      [],
      'System secrets, at least 16 characters each. The first signs and encrypts; the others are still accepted (rotation). Required unless `dsn` is `memory`.',
      { secret: true },
      z.string().min(16, 'must be at least 16 characters'),
    ),
    cookie: list(
      [],
      'Cookie secrets (default: `secrets.system`).',
      { secret: true },
      z.string().min(16, 'must be at least 16 characters'),
    ),
    pagination: list(
      [],
      'Page-token secrets (default: `secrets.system`).',
      { secret: true },
      z.string().min(16, 'must be at least 16 characters'),
    ),
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
    memory: { dir: str('.gatehouse', 'Data folder of the embedded PostgreSQL (`dsn: memory`).') },
    pool: {
      max: int(10, 'Maximum PostgreSQL connections per process.', 1),
      connect_timeout: dur(
        '5s',
        'How long a request waits for a PostgreSQL connection (a free pooled one or a new one) before it is answered 503 (see Security: Database outages). `0` waits without limit.',
      ),
    },
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
  rate_limit: {
    failed_auth: {
      enabled: bool(
        true,
        'Limit failed client authentications (token, revocation), wrong device user codes and failed SCIM bearer checks per credential and per source address (see Security: Rate limiting).',
      ),
      window: dur('1m', 'Length of the fixed counting window; a blocked caller may retry when it ends.'),
      per_credential: int(
        20,
        'Failures per client id or SCIM directory per window before further attempts for it are refused with 429 (0: no per-credential limit).',
      ),
      per_address: int(
        100,
        'Failures per source address per window before its further attempts are refused with 429 (0: no per-address limit).',
      ),
      per_address_user_codes: int(
        20,
        'Wrong device user codes per window for device challenges started from one source address (the browser at `/oauth2/device/verify`) before that address gets no more challenges and its user codes are refused with 429 (0: no per-address limit; each challenge still allows 5). See Security: Rate limiting.',
      ),
    },
  },
  worker: {
    concurrency: int(4, 'Jobs run at once per worker process.', 1),
    poll_interval: dur('2s', 'Fallback poll interval (jobs are normally picked up at once via LISTEN/NOTIFY).'),
    in_process: oneOf(
      ['auto', 'on', 'off'],
      'auto',
      'Run a worker inside `serve all` (`auto`: only with `dsn: memory`).',
    ),
    liveness_check_interval: dur(
      '10s',
      'How often a worker looks for dead worker processes and releases their jobs at once (graphile-worker alone waits 4 hours).',
    ),
    crontab: str(
      '',
      'Path of the crontab file the worker schedules from (empty: the `crontab` file shipped with gatehouse).',
    ),
    metrics: {
      port: int(
        0,
        'Port on which `gatehouse worker` serves Prometheus metrics at `/metrics/prometheus` (0: off).',
        0,
        65535,
      ),
      host: str('', 'Interface of the worker metrics listener (empty: all interfaces).'),
    },
  },
  queue: {
    dsn: str(
      '',
      'PostgreSQL database of the job queue (graphile-worker), `postgres://…`, when it is not the database of `dsn`. Transactions then write their jobs to an outbox table in the data database, and one worker of the fleet (elected with an advisory lock on this database) relays them into the queue, in order and exactly once. Empty: the queue lives in the database of `dsn` and transactions add their jobs directly. Required when `dsn` is CockroachDB (`cockroach://…`), which cannot hold the queue: start-up stops with an error naming this key otherwise. See Scaling: a separate queue database.',
      { secret: true },
    ),
    direct_dsn: str(
      '',
      'A direct (not pooled) PostgreSQL connection to the queue database (`queue.dsn` when set, else the database of `dsn`), for when that DSN goes through a transaction-pooling pooler such as PgBouncer: workers run graphile-worker and the job relay on it (LISTEN/NOTIFY, session advisory locks); without `queue.dsn` every process also listens for key changes on it. Empty: the queue DSN itself; a worker then refuses one that turns out to be such a pooler, and web processes rebuild cached keys per use.',
      { secret: true },
    ),
    relay_interval: dur(
      '500ms',
      'With `queue.dsn`: how often the job relay looks for new jobs in the outbox, and how often the other workers try to take over the relay.',
    ),
    relay_batch_size: int(500, 'With `queue.dsn`: outbox rows the job relay moves per queue transaction.', 1),
  },
  tracing: {
    provider: oneOf(
      ['', 'otel', 'jaeger', 'zipkin'],
      '',
      "Tracing backend (Hydra's key): `otel` sends OpenTelemetry spans over OTLP/HTTP; empty: off. Hydra's `jaeger` and `zipkin` are accepted with a warning and leave tracing off.",
    ),
    service_name: str('gatehouse', 'Service name of the spans (`service.name`).'),
    providers: {
      otlp: {
        server_url: str(
          'localhost:4318',
          'OTLP/HTTP endpoint, `host:port` as in Hydra (spans go to `/v1/traces`); a full URL is accepted too.',
        ),
        insecure: bool(false, 'Use plain HTTP instead of HTTPS for `server_url`.'),
        sampling: {
          sampling_ratio: leaf(
            'number',
            z.number().min(0).max(1).default(1),
            'Share of new traces sampled (0 to 1); requests that carry a sampled `traceparent` are always traced.',
            '1',
          ),
        },
      },
    },
  },
  metrics: {
    enabled: bool(
      true,
      'Record the request, token, SCIM, webhook and query metrics served at `/admin/metrics/prometheus` (off: process, pool and job metrics only).',
    ),
  },
  audit: {
    enabled: bool(
      false,
      'Write audit events as rows of `audit_events` (in the transaction of the change) readable at `GET /admin/audit/events`; they are span events either way.',
    ),
    retention: dur('2160h', 'How long audit rows are kept (purged hourly in batches; `0`: kept forever).'),
    purge_batch_size: int(1000, 'Audit rows deleted per purge transaction.', 1),
  },
  janitor: {
    batch_size: int(100, 'Rows deleted per janitor transaction.', 1),
    limit: int(10000, 'Rows a janitor run selects per target before it re-enqueues itself.', 1),
  },
  log: {
    level: oneOf(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'panic'], 'info', 'Log level.'),
    format: oneOf(
      ['json', 'json_pretty', 'text'],
      'json',
      'Log format: one JSON object per line, indented JSON, or `LEVEL time message key=value…` text.',
    ),
    leak_sensitive_values: bool(false, 'Log values that are normally redacted (never in production).'),
  },
  dsync: {
    external_url: url('Base URL that identity providers reach (`scim.endpoint` prefix).', '= urls.self.public'),
    api_keys: list([], 'API keys accepted by `/api/v1/dsync` (`Authorization: Api-Key <key>`).', {
      secret: true,
      aliases: ['JACKSON_API_KEYS'],
    }),
    api: {
      listener: oneOf(
        ['admin', 'public', 'both'],
        'admin',
        'Where `/api/v1/dsync` is served: the admin listener, the public one (one base URL for SCIM, the Google callback and the API, as Jackson) or both. `Authorization: Api-Key` is required on each.',
      ),
    },
    webhook_batch_size: int(
      0,
      'Batch mode: queue events and deliver up to this many per directory per batch (0: real-time delivery).',
    ),
    webhook_batch_cron_interval: secs(
      '0',
      'Batch mode: process the queue on this interval (seconds or a duration; 0: only on `POST /api/v1/dsync/cron/process-events`).',
    ),
    webhook: {
      max_attempts: int(10, 'Delivery attempts per webhook job before it is left in the failed state.', 1),
      concurrency: int(
        16,
        'Real-time webhook senders (one per directory while it has events on their way) run at once per worker process, in job slots of their own beside `worker.concurrency`; a sender takes a pooled connection only per statement. Give the fleet at least as many as directories with steady traffic. 0: senders run in the `worker.concurrency` slots.',
        0,
      ),
      timeout: dur('20s', 'Timeout of one webhook request.'),
      linger: dur(
        '250ms',
        'How long a directory’s real-time sender that found nothing left to send waits for new events before it steps down (0: steps down at once); it waits only while another job slot of its worker is idle.',
      ),
    },
    webhook_logs_ttl: dur('168h', 'How long webhook logs are kept.'),
    debug_webhooks: bool(
      false,
      'Log every webhook body and the receiver’s answer at info, redacted (only the event’s identifiers stay readable; e-mail addresses and tokens in answers are masked).',
    ),
    page_limit: int(
      50,
      'The default and largest page of every directory-sync list (Jackson’s `db.pageLimit`).',
      1,
      10000,
    ),
    events: {
      retention: dur(
        '720h',
        'How long directory-sync events (and their delivered outbox rows) are kept; purged in bounded batches by the crontab task `dsync_events_purge`.',
      ),
    },
    webhook_url: url(
      'Global webhook for directory lifecycle events (`dsync.created`, `dsync.deleted`, `dsync.activated`, `dsync.deactivated`); off when empty.',
      '""',
      { aliases: ['WEBHOOK_URL'] },
    ),
    webhook_secret: str('', 'Signing secret of `dsync.webhook_url` (both must be set).', {
      secret: true,
      aliases: ['WEBHOOK_SECRET'],
    }),
    disallow_private_ip_ranges: bool(
      false,
      'Refuse webhook and cloud-directory (Google) requests to internal addresses (see Security).',
    ),
    google: {
      client_id: str('', 'Google OAuth client id.', { aliases: ['GOOGLE_CLIENT_ID'] }),
      client_secret: str('', 'Google OAuth client secret.', { secret: true, aliases: ['GOOGLE_CLIENT_SECRET'] }),
      authorize_path: str(
        '/api/scim/oauth/authorize',
        'Path (on `dsync.external_url`) that starts the Google authorization.',
      ),
      callback_path: str('/api/scim/oauth/callback', 'Path (on `dsync.external_url`) of the OAuth callback.'),
      authorization_link_ttl: dur(
        '15m',
        'How long an authorization link minted with `POST /api/v1/dsync/{id}/google/authorization-link` starts the Google authorization (see Directory sync).',
      ),
      auth_url: url(
        'Google authorization endpoint (point it elsewhere for a test double or an air-gapped proxy).',
        'https://accounts.google.com/o/oauth2/v2/auth',
      ),
      token_url: url('Google token endpoint.', 'https://oauth2.googleapis.com/token'),
      api_url: url('Base URL of the Google Admin SDK (Directory API).', 'https://admin.googleapis.com'),
      sync_interval: secs(
        '2h',
        'How often each Google directory is synced: the crontab sweep (every 10 minutes) enqueues the directories whose last run started longer ago (seconds or a duration; 0: only on demand).',
        { aliases: ['DSYNC_GOOGLE_CRON_INTERVAL'] },
      ),
    },
  },
} satisfies { [key: string]: SpecNode };

export interface LeafInfo {
  path: string;
  env: string[];
  node: Leaf;
}

function isLeaf(n: SpecNode): n is Leaf {
  return (n as Leaf).leaf === true;
}

export function configLeaves(node: SpecNode = spec, prefix: string[] = []): LeafInfo[] {
  if (isLeaf(node)) {
    const path = prefix.join('.');
    return [{ path, env: [prefix.join('_').toUpperCase(), ...(node.aliases ?? [])], node }];
  }
  return Object.entries(node).flatMap(([k, child]) => configLeaves(child, [...prefix, k]));
}

function build(node: SpecNode): z.ZodType {
  if (isLeaf(node)) return node.schema;
  const shape: Record<string, z.ZodType> = {};
  for (const [k, child] of Object.entries(node)) shape[k] = build(child);
  return z.strictObject(shape).prefault({});
}

export const configSchema = build(spec);

type Out<N> = N extends Leaf<infer S> ? z.output<S> : { readonly [K in keyof N]: Out<N[K]> };

/** Parsed configuration, before derived defaults. Durations are milliseconds. */
export type RawConfig = Out<typeof spec>;
