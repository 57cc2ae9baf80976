/**
 * The core's part of the configuration: the database, the listeners and their addresses
 * (`urls.self`), secrets, rate limits, the worker and the queue, tracing, metrics, audit and logs.
 * The composition root registers it first and declares its key tree (src/config.ts); the faces'
 * parts follow.
 */
import { z } from 'zod';
import { parseAdminKeyEntry } from '../http/admin-auth.ts';
import { listenerTls } from '../http/tls.ts';
import { ConfigError } from './errors.ts';
import { HYDRA_NOT_IMPLEMENTED } from './hydra-keys.ts';
import { bool, type ConfigPart, dur, int, leaf, list, oneOf, str, url } from './schema.ts';

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
    ['Accept', 'Content-Type', 'Content-Length', 'Accept-Language', 'Content-Language', 'Authorization', 'DPoP'],
    'Request headers a cross-origin request may send (Hydra’s list, plus `DPoP` for browser clients’ proofs, RFC 9449).',
  ),
  exposed_headers: list(
    [
      'Cache-Control',
      'Expires',
      'Last-Modified',
      'Pragma',
      'Content-Length',
      'Content-Language',
      'Content-Type',
      'DPoP-Nonce',
      'WWW-Authenticate',
    ],
    'Response headers the browser exposes to the calling script (Hydra’s list, plus `DPoP-Nonce` and `WWW-Authenticate`, which a browser client needs to answer a DPoP nonce request, RFC 9449 §8).',
  ),
  allow_credentials: bool(
    true,
    'Send `Access-Control-Allow-Credentials: true` with an allowed origin. Ignored (warned at start-up) while `allowed_origins` allows every origin: no credentials with `*`.',
  ),
  max_age: int(0, 'Seconds a preflight answer may be cached (`Access-Control-Max-Age`; 0: not sent).'),
  debug: bool(false, 'Log every CORS decision (debug level).'),
});

const coreSpec = {
  dsn: str(
    'memory',
    'Database: `postgres://…`, `postgresql://…`, `cockroach://…`, or `memory` (embedded PostgreSQL in `db.memory.dir`).',
    { secret: true },
  ),
  dev: bool(false, 'Development mode: allows an http issuer and insecure cookies.'),
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
      auth: {
        enabled: bool(
          false,
          'Require `Authorization: Bearer <API key or access token>` on the admin API, every route but health and version (Hydra has no such check, ory/hydra#2041; see Security: Admin API authentication). The console keeps its own sign-in; `/api/v1/dsync` also takes its Api-Key (`dsync.api_keys`).',
        ),
        api_keys: list(
          [],
          'API keys of the admin API, each as `sha256:<64 hex>` (the SHA-256 of the key, never the key itself), optionally followed by `:<family,…>` to allow only those route families (`clients`, `keys`, `flows`, `sessions`, `trust`, `jobs`, `audit`, `metadata`, and `dsync` for `/api/v1/dsync`; none listed: all). `gatehouse admin-key hash <key>` (or `--generate`) prints an entry.',
          { secret: true },
          z.string().superRefine((v, ctx) => {
            const parsed = parseAdminKeyEntry(v);
            if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
          }),
        ),
        tokens: bool(
          true,
          'With `enabled`: also accept access tokens this server issued through `client_credentials` whose granted scope holds `gatehouse:admin` (every family) or `gatehouse:admin:<family>`.',
        ),
      },
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
  db: {
    memory: { dir: str('.gatehouse', 'Data folder of the embedded PostgreSQL (`dsn: memory`).') },
    pool: {
      max: int(10, 'Maximum PostgreSQL connections per process.', 1),
      connect_timeout: dur(
        '5s',
        'How long a request waits for a PostgreSQL connection (a free pooled one or a new one) before it is answered 503 (see Security: Database outages). `0` waits without limit.',
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
  log: {
    level: oneOf(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'panic'], 'info', 'Log level.'),
    format: oneOf(
      ['json', 'json_pretty', 'text'],
      'json',
      'Log format: one JSON object per line, indented JSON, or `LEVEL time message key=value…` text.',
    ),
    leak_sensitive_values: bool(false, 'Log values that are normally redacted (never in production).'),
  },
};

const withSlash = (u: string) => (u.endsWith('/') ? u : `${u}/`);

export const CORE_CONFIG: ConfigPart<typeof coreSpec> = {
  spec: coreSpec,
  notImplemented: HYDRA_NOT_IMPLEMENTED,
  check(c, { needsSecrets }) {
    const out: string[] = [];
    if (needsSecrets && c.dsn !== 'memory' && c.secrets.system.length === 0) {
      out.push('secrets.system: required when dsn is not memory (set SECRETS_SYSTEM to at least 16 random characters)');
    }
    const auth = c.serve.admin.auth;
    if (auth.enabled && auth.api_keys.length === 0 && !auth.tokens) {
      out.push('serve.admin.auth.enabled: nothing could call the admin API: set api_keys or turn tokens on');
    }
    for (const which of ['public', 'admin'] as const) {
      try {
        listenerTls(c, which);
      } catch (e) {
        if (!(e instanceof ConfigError)) throw e;
        out.push(...e.problems);
      }
    }
    return out;
  },
  derive(m) {
    const c = { ...m };
    const scheme = (which: 'public' | 'admin') => (listenerTls(c, which) ? 'https' : 'http');
    const issuer = c.urls.self.issuer || `${scheme('public')}://localhost:${c.serve.public.port}/`;
    m.urls = {
      ...c.urls,
      self: {
        issuer,
        public: withSlash(c.urls.self.public || issuer),
        admin: withSlash(c.urls.self.admin || `${scheme('admin')}://localhost:${c.serve.admin.port}/`),
      },
    };
  },
};
