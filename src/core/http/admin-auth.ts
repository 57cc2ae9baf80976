/**
 * Authentication of the admin API (`serve.admin.auth`), which Hydra leaves to the network
 * (ory/hydra#2041): off by default, so that Hydra deployments keep working unchanged. When on, every
 * admin route but health and version needs `Authorization: Bearer <credential>` (RFC 6750 §2.1),
 * where the credential is
 *
 * - an API key of `serve.admin.auth.api_keys`, configured only as its SHA-256 digest
 *   (`sha256:<64 hex>[:family,…]`), so that the configuration holds nothing a reader could replay; or
 * - with `serve.admin.auth.tokens`, an access token this server issued to a client through
 *   `client_credentials` whose granted scope holds `gatehouse:admin` (every family) or
 *   `gatehouse:admin:<family>` (the composition root passes the domain's check as `tokens`).
 *
 * Each admin route declares its family in its policy (`RoutePolicy.family`, checked at start-up
 * against `adminFamilies()`); a credential without that family's scope is refused with 403. The
 * guard runs in the route policy layer (core/http/routes.ts), before the handler of the route that
 * matched, after the failed-authentication limiter, which counts its 401s per source address.
 *
 * An API of a domain with a credential of its own may take admin credentials too (directory sync's
 * management API, beside its Jackson Api-Key): its guard checks them through `adminCredentials`, by
 * the family its routes declare, and renders the refusals in its own error shape.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { AppError, HERODOT } from '../errors.ts';
import { type Actor, setCaller } from '../observability/scope.ts';
import type { FailedAuthTarget } from './auth-failures.ts';
import { bearerToken } from './params.ts';
import type { DeclaredRoute, Guard } from './routes.ts';

/**
 * The admin API's route families the core knows; each is a scope `gatehouse:admin:<family>`. A domain
 * names its own families (`registerAdminFamilies`). docs/security.md maps the routes.
 */
export const ADMIN_FAMILIES = {
  clients: 'OAuth 2.0 clients and their lifespans (`/admin/clients…`).',
  keys: 'JSON Web Key sets (`/admin/keys…`).',
  flows: 'Login, consent, logout and device requests (`/admin/oauth2/auth/requests/…`).',
  sessions:
    'Consent and login sessions and the tokens issued from them (`/admin/oauth2/auth/sessions/…`, `/admin/oauth2/introspect`, `/admin/oauth2/tokens`).',
  trust: 'Trusted JWT-bearer issuers (`/admin/trust/…`).',
  jobs: 'Background jobs that ran out of attempts, and their retry (`/admin/jobs/…`).',
  audit: 'Audit events (`/admin/audit/events`).',
  metadata: 'Prometheus metrics and the admin OpenAPI document (`/admin/metrics/prometheus`, `/admin/openapi.json`).',
} as const;

/**
 * The families a domain names (the core names no domain): the composition root registers them with
 * `registerAdminFamilies` before any configuration is read, and adds the same names to this
 * interface by declaration merging, so that every route's and caller's family is checked.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging, one domain at a time
export interface AdminFamilies {}
export type AdminFamily = keyof typeof ADMIN_FAMILIES | (keyof AdminFamilies & string);

/** Filled once by `registerAdminFamilies`. */
const registered: { families?: Readonly<Record<string, string>> } = {};

/** Registers the domains' families with their descriptions (the composition root does, once). @throws on a name taken */
export function registerAdminFamilies(families: Readonly<Record<string, string>>): void {
  if (registered.families) throw new Error('the admin API families are registered once, by the composition root');
  for (const name of Object.keys(families)) {
    if (Object.hasOwn(ADMIN_FAMILIES, name)) throw new Error(`admin API family '${name}' is declared twice`);
    if (!/^[a-z]+$/.test(name)) throw new Error(`admin API family '${name}': lower-case letters only`);
  }
  registered.families = { ...families };
}

/** Every family, the core's and the registered ones, with its description. */
export function adminFamilies(): Readonly<Record<AdminFamily, string>> {
  return { ...ADMIN_FAMILIES, ...registered.families } as Record<AdminFamily, string>;
}

const familyNames = () => Object.keys(adminFamilies()) as AdminFamily[];
const isFamily = (name: string): name is AdminFamily => Object.hasOwn(adminFamilies(), name);

/** The scope of every family; `gatehouse:admin:<family>` is one. */
export const ADMIN_SCOPE = 'gatehouse:admin';
/** The realm of the `WWW-Authenticate` challenge (RFC 6750 §3). */
export const ADMIN_REALM = 'gatehouse-admin';

/** A configured API key: its SHA-256 digest, a short id for audit events, and its families. */
export interface AdminKey {
  digest: Buffer;
  /** The first 8 hex digits of the digest: names the key in audit events and logs, reveals nothing. */
  id: string;
  families: ReadonlySet<AdminFamily> | 'all';
}

/** Who called, once authenticated: the audit actor, and what it may do. */
export interface AdminCaller {
  actor: Actor;
  families: ReadonlySet<AdminFamily> | 'all';
}

/** The domain's check of an access token: the client and granted scope of an active client_credentials token. */
export type AdminTokenCheck = (token: string) => Promise<{ clientId: string; scope: readonly string[] } | undefined>;

/** `sha256:<64 hex>` of a key: the form `serve.admin.auth.api_keys` takes. */
export function hashAdminKey(key: string): string {
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}

/** A new random API key (256 bits), prefixed so that secret scanners and the log sanitiser know it. */
export const generateAdminKey = (): string => `gha_${randomBytes(32).toString('base64url')}`;

const ENTRY = /^sha256:([0-9a-f]{64})(?::([a-z,]+))?$/;

/**
 * Parses one entry of `serve.admin.auth.api_keys`; a string is the problem with it. The message
 * never repeats the entry: a plaintext key given by mistake is a secret.
 */
export function parseAdminKeyEntry(entry: string): AdminKey | string {
  const m = ENTRY.exec(entry.trim().toLowerCase());
  if (!m) {
    return 'must be `sha256:<64 hex digits>` optionally followed by `:<family,…>` — the SHA-256 of the key, never the key itself (`gatehouse admin-key hash <key>` prints the entry)';
  }
  const hex = m[1] as string;
  const names = (m[2] ?? '').split(',').filter(Boolean);
  const unknown = names.find((n) => !isFamily(n));
  if (unknown) return `names an unknown family '${unknown}' (known: ${familyNames().join(', ')})`;
  return {
    digest: Buffer.from(hex, 'hex'),
    id: hex.slice(0, 8),
    families: names.length ? new Set(names as AdminFamily[]) : 'all',
  };
}

/** The families an access token's granted scope gives: `gatehouse:admin` all, `gatehouse:admin:<family>` one each. */
export function familiesOfScope(scope: readonly string[]): ReadonlySet<AdminFamily> | 'all' | undefined {
  if (scope.includes(ADMIN_SCOPE)) return 'all';
  const out = new Set<AdminFamily>();
  for (const s of scope) {
    const family = s.startsWith(`${ADMIN_SCOPE}:`) ? s.slice(ADMIN_SCOPE.length + 1) : '';
    if (isFamily(family)) out.add(family);
  }
  return out.size ? out : undefined;
}

/**
 * The key whose digest is the SHA-256 of `presented`. Every configured digest is compared, in
 * constant time and without stopping at a match, so timing tells neither which key nor how many.
 */
function keyOf(keys: readonly AdminKey[], presented: string): AdminKey | undefined {
  const digest = createHash('sha256').update(presented, 'utf8').digest();
  let found: AdminKey | undefined;
  for (const k of keys) if (timingSafeEqual(k.digest, digest) && !found) found = k;
  return found;
}

/** Looks like an access token of this server: opaque (`ory_at_`) or a compact JWS. */
const tokenShaped = (t: string) => t.startsWith('ory_at_') || t.split('.').length === 3;

/** RFC 6750 §3: the challenge, with the error code once a credential was presented. */
const challenge = (extra = '') => ({ 'WWW-Authenticate': `Bearer realm="${ADMIN_REALM}"${extra}` });

/** The headers of a 401 for admin credentials: the challenge, `invalid_token` when one was presented. */
export const adminChallenge = (presented: boolean): Record<string, string> =>
  challenge(presented ? ', error="invalid_token"' : '');

function unauthorized(presented: boolean): AppError {
  return new AppError({
    status: 401,
    code: HERODOT.unauthorized,
    description: presented
      ? 'The admin API credential is not valid, has expired or was revoked.'
      : 'The admin API requires a credential: Authorization: Bearer <API key or access token>.',
    headers: adminChallenge(presented),
  });
}

/**
 * 403 for a credential without `family`, with the `insufficient_scope` challenge. It carries no error
 * family: it renders in the shape of the request's path (Hydra's on the admin API, another API's own).
 */
function forbidden(family: string): AppError {
  const scope = `${ADMIN_SCOPE}:${family}`;
  return new AppError({
    status: 403,
    code: HERODOT.forbidden,
    description: `The credential lacks the scope ${scope} (or ${ADMIN_SCOPE}) this route needs.`,
    headers: challenge(`, error="insufficient_scope", scope="${scope}"`),
  });
}

export interface AdminAuthOptions {
  /** `serve.admin.auth.enabled`. */
  enabled: boolean;
  /** `serve.admin.auth.api_keys`, valid entries (the configuration refuses others). */
  apiKeys: readonly string[];
  /** The check of access tokens (`serve.admin.auth.tokens`); absent: tokens are refused. */
  tokens?: AdminTokenCheck | undefined;
}

/** The admin credentials of `serve.admin.auth`, for the admin guard and the guards of other APIs that take them. */
export interface AdminCredentials {
  /** The caller `presented` (the credential of `Authorization: Bearer`) authenticates, if any. */
  identify(presented: string): Promise<AdminCaller | undefined>;
  /**
   * Lets `caller` through to a route of `family`: from now on the request's caller, whom its audit
   * events name (never the credential). @throws 403 with the `insufficient_scope` challenge without it
   */
  admit(ctx: Context, caller: AdminCaller, family: AdminFamily): void;
}

/** The check of admin credentials while `serve.admin.auth.enabled`; undefined while it is off. */
export function adminCredentials(o: AdminAuthOptions): AdminCredentials | undefined {
  if (!o.enabled) return undefined;
  const keys = o.apiKeys.map(parseAdminKeyEntry).filter((k): k is AdminKey => typeof k !== 'string');
  return {
    // An API key first, then an access token.
    async identify(presented) {
      const key = keyOf(keys, presented);
      if (key) return { actor: { kind: 'api_key', id: key.id }, families: key.families };
      if (!o.tokens || !tokenShaped(presented)) return undefined;
      const token = await o.tokens(presented);
      const families = token && familiesOfScope(token.scope);
      return families ? { actor: { kind: 'client', id: token.clientId }, families } : undefined;
    },
    admit(ctx, caller, family) {
      if (caller.families !== 'all' && !caller.families.has(family)) throw forbidden(family);
      ctx.state.adminCaller = caller;
      setCaller(caller.actor);
    },
  };
}

/** Failed admin authentications are counted per source address (a guessed key names no credential to count). */
export const adminFailedAuth: FailedAuthTarget = () => ({ kind: 'admin', credential: undefined });

/** The guard of access `admin` (core/http/routes.ts), open while `serve.admin.auth.enabled` is off. */
export function adminGuard(o: AdminAuthOptions): Guard {
  const families = familyNames();
  const base =
    'Whoever reaches the admin listener while `serve.admin.auth.enabled` is off (Hydra’s model: keep it on a private network); when on, `Authorization: Bearer` with an API key of `serve.admin.auth.api_keys` or a client_credentials access token holding the route family’s scope (failures rate limited). JSON bodies only, so no web page can post to it across origins.';
  const credentials = adminCredentials(o);
  if (!credentials) return { description: base, open: true, families };
  return {
    description: base,
    families,
    failedAuth: adminFailedAuth,
    async check(ctx: Context, next: Next) {
      const family = (ctx.state.route as DeclaredRoute).policy.family as AdminFamily;
      const presented = bearerToken(ctx.get('authorization'));
      const caller = presented ? await credentials.identify(presented) : undefined;
      if (!caller) throw unauthorized(presented !== undefined);
      // Handlers and audit events of this request name the caller (never the credential).
      credentials.admit(ctx, caller, family);
      await next();
    },
  };
}
