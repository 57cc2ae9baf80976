/**
 * Loads configuration from an optional YAML/JSON file and the environment (env wins), validates
 * it with the zod schema and fills in Hydra's derived defaults. Every problem is reported as one
 * line that names the key (and the environment variable or file it came from).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { listenerTls } from '../http/tls.ts';
import { ConfigError } from './errors.ts';
import { HYDRA_FILE_ONLY, HYDRA_NOT_IMPLEMENTED, hydraEntryFor } from './hydra-keys.ts';
import { configLeaves, configSchema, type LeafInfo, type RawConfig, spec } from './schema.ts';

export type Config = RawConfig;

export { ConfigError };

export interface LoadOptions {
  file?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Values applied last (tests, CLI flags), as dotted paths. */
  overrides?: Record<string, unknown>;
  /**
   * Receives one line per Hydra key that is set but not implemented (ignored). Default: written to
   * stderr as `config warning: …`.
   */
  warn?: (line: string) => void;
  /**
   * False for commands that neither sign nor decrypt anything (`migrate`, `janitor`): Hydra runs
   * them with a DSN alone, so `secrets.system` is not required. Default true.
   */
  needsSecrets?: boolean;
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

function coerceEnv(leaf: LeafInfo, raw: string): { value?: unknown; problem?: string } {
  const v = raw.trim();
  switch (leaf.node.kind) {
    case 'int':
      return /^-?\d+$/.test(v) ? { value: Number(v) } : { problem: `expected an integer, got ${JSON.stringify(raw)}` };
    case 'number':
      return /^-?\d+(\.\d+)?$/.test(v)
        ? { value: Number(v) }
        : { problem: `expected a number, got ${JSON.stringify(raw)}` };
    case 'bool':
      if (TRUE.has(v.toLowerCase())) return { value: true };
      if (FALSE.has(v.toLowerCase())) return { value: false };
      return { problem: `expected true or false, got ${JSON.stringify(raw)}` };
    case 'list':
      return {
        value: v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      };
    default:
      return { value: raw };
  }
}

function setPath(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let cur = obj;
  for (const key of path.slice(0, -1)) {
    const next = cur[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) cur[key] = {};
    cur = cur[key] as Record<string, unknown>;
  }
  cur[path[path.length - 1] as string] = value;
}

function readFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError([`cannot read config file ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`]);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ConfigError([`config file ${file} is not valid YAML: ${(e as Error).message.split('\n')[0]}`]);
  }
  if (doc == null) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError([`config file ${file} must hold a mapping`]);
  return doc as Record<string, unknown>;
}

type SpecTree = { [key: string]: unknown };
const isLeafNode = (n: unknown) => (n as { leaf?: boolean } | undefined)?.leaf === true;
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The spec node at a dotted path (undefined when there is none). */
function specAt(path: string[]): unknown {
  let cur: unknown = spec;
  for (const k of path) {
    if (!isPlainObject(cur) || isLeafNode(cur) || !Object.hasOwn(cur, k)) return undefined;
    cur = (cur as SpecTree)[k];
  }
  return cur;
}

/** Leaf paths of a value (a nested mapping's leaves; anything else is one leaf). */
function valueLeaves(v: unknown, path: string): string[] {
  if (!isPlainObject(v) || Object.keys(v).length === 0) return [path];
  return Object.entries(v).flatMap(([k, c]) => valueLeaves(c, `${path}.${k}`));
}

/**
 * Removes the keys of `input` that are Hydra's but not gatehouse's (HYDRA_NOT_IMPLEMENTED) and
 * returns their leaf paths. Other unknown keys stay, for the schema to report.
 */
function stripHydraKeys(input: Record<string, unknown>, path: string[] = []): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(input)) {
    const p = [...path, k];
    const node = specAt(p);
    if (node !== undefined) {
      if (!isLeafNode(node) && isPlainObject(v)) out.push(...stripHydraKeys(v, p));
      continue;
    }
    if (hydraEntryFor(p.join('.'))) {
      out.push(...valueLeaves(v, p.join('.')));
      delete input[k];
    }
  }
  return out;
}

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) (d[0] as number[])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const prev = d[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
      }
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/** The closest candidate within a small distance (a typo), if any. */
function closest(word: string, candidates: Iterable<string>): string | undefined {
  const limit = word.length <= 4 ? 1 : word.length <= 8 ? 2 : 3;
  let best: string | undefined;
  let bestD = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const dist = editDistance(word.toLowerCase(), c.toLowerCase());
    if (dist < bestD) {
      best = c;
      bestD = dist;
    }
  }
  return bestD <= limit ? best : undefined;
}

/** "did you mean …" for an unknown key: a close sibling, else a leaf elsewhere with the same name. */
function suggestKey(parent: string[], key: string): string | undefined {
  const node = specAt(parent);
  const prefix = parent.length ? `${parent.join('.')}.` : '';
  const siblings = new Set<string>(isPlainObject(node) && !isLeafNode(node) ? Object.keys(node) : []);
  for (const e of HYDRA_NOT_IMPLEMENTED) {
    if (e.startsWith(prefix) && !e.slice(prefix.length).includes('.')) siblings.add(e.slice(prefix.length));
  }
  const near = closest(key, siblings);
  if (near) return `${prefix}${near}`;
  const elsewhere = configLeaves().find((l) => l.path.split('.').at(-1) === key);
  return elsewhere?.path;
}

function describeIssue(issue: z.core.$ZodIssue, sources: Map<string, string>): string {
  const path = issue.path.join('.');
  if (issue.code === 'unrecognized_keys') {
    return issue.keys
      .map((k) => {
        const hint = suggestKey(issue.path.map(String), k);
        return `${path ? `${path}.` : ''}${k}: unknown key${hint ? ` (did you mean ${hint}?)` : ''}`;
      })
      .join('\n');
  }
  const src = sources.get(path);
  return `${path || '(root)'}: ${issue.message}${src ? ` (from ${src})` : ''}`;
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  const file = opts.file ?? env.GATEHOUSE_CONFIG;
  const input: Record<string, unknown> = file ? readFile(file) : {};
  const sources = new Map<string, string>();
  if (file) for (const l of configLeaves()) sources.set(l.path, file);
  const problems: string[] = [];
  const warnings = stripHydraKeys(input).map((p) => `${p} (from ${file})`);
  const { warnings: envWarnings, problems: envProblems } = checkEnvironment(env);
  warnings.push(...envWarnings);
  problems.push(...envProblems);

  for (const l of configLeaves()) {
    const name = l.env.find((n) => env[n] !== undefined);
    if (!name) continue;
    const { value, problem } = coerceEnv(l, env[name] as string);
    if (problem) problems.push(`${l.path}: ${problem} (from ${name})`);
    else {
      setPath(input, l.path.split('.'), value);
      sources.set(l.path, name);
    }
  }
  for (const [path, value] of Object.entries(opts.overrides ?? {})) {
    setPath(input, path.split('.'), value);
    sources.set(path, 'override');
  }

  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(...describeIssue(issue, sources).split('\n'));
  }
  if (problems.length) throw new ConfigError(problems);
  const warn = opts.warn ?? ((line: string) => process.stderr.write(`config warning: ${line}\n`));
  for (const w of warnings) warn(`${w} is a Hydra setting that gatehouse does not implement; ignored`);
  const cfg = structuredClone(parsed.data) as Config;
  if (cfg.tracing.provider === 'jaeger' || cfg.tracing.provider === 'zipkin') {
    warn(
      `tracing.provider: ${cfg.tracing.provider} is a Hydra tracing provider that gatehouse does not implement; tracing is off (use otel, which Jaeger and Zipkin collectors accept over OTLP)`,
    );
  }
  const more = crossChecks(cfg, opts.needsSecrets ?? true);
  if (more.length) throw new ConfigError(more);
  return deriveDefaults(cfg);
}

const envName = (path: string) => path.replaceAll('.', '_').toUpperCase();

/**
 * Environment variables that are not gatehouse keys: a Hydra key that gatehouse does not implement
 * is a warning (`TRACING_PROVIDER`), and a near miss of a gatehouse variable under one of its key
 * prefixes (`SERVE_PUBLIC_PROT`) is an error. Anything else is not configuration (the environment
 * holds much more: `DB_PORT` from a container link, `LOG_FILE` of another tool) and is left alone.
 */
function checkEnvironment(env: NodeJS.ProcessEnv): { warnings: string[]; problems: string[] } {
  const known = new Set(configLeaves().flatMap((l) => l.env));
  const prefixes = Object.keys(spec).map((k) => `${envName(k)}_`);
  const hydra = HYDRA_NOT_IMPLEMENTED.filter((e) => !HYDRA_FILE_ONLY.has(e)).map((e) => ({ e, n: envName(e) }));
  const warnings: string[] = [];
  const problems: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || known.has(name)) continue;
    const h = hydra.find(({ n }) => name === n || name.startsWith(`${n}_`));
    if (h) {
      warnings.push(`${name} (${h.e})`);
      continue;
    }
    if (!prefixes.some((p) => name.startsWith(p))) continue;
    const near = closest(name, known);
    if (near) problems.push(`${name}: unknown environment variable (did you mean ${near}?)`);
  }
  return { warnings, problems };
}

const FIVE_MINUTES = 5 * 60_000;
/** Claims of JWT access tokens that the stateless marker claim may not replace. */
const RESERVED_JWT_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'client_id', 'scp', 'scope', 'ext'];
const DAY = 86_400_000;

function crossChecks(c: Config, needsSecrets: boolean): string[] {
  const out: string[] = [];
  if (needsSecrets && c.dsn !== 'memory' && c.secrets.system.length === 0) {
    out.push('secrets.system: required when dsn is not memory (set SECRETS_SYSTEM to at least 16 random characters)');
  }
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
  for (const which of ['public', 'admin'] as const) {
    try {
      listenerTls(c, which);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      out.push(...e.problems);
    }
  }
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
  if (c.console.enabled === true && c.console.operators.length === 0 && !(c.dev_ui.enabled ?? c.dsn === 'memory')) {
    out.push('console.enabled: the operator console needs at least one subject in console.operators');
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
}

type DevUserLike = { subject: string };

const withSlash = (u: string) => (u.endsWith('/') ? u : `${u}/`);

function deriveDefaults(c: Config): Config {
  const m = c as { -readonly [K in keyof Config]: Config[K] };
  const scheme = (which: 'public' | 'admin') => (listenerTls(c, which) ? 'https' : 'http');
  const issuer = c.urls.self.issuer || `${scheme('public')}://localhost:${c.serve.public.port}/`;
  const pub = withSlash(c.urls.self.public || issuer);
  const devUi = c.dev_ui.enabled ?? c.dsn === 'memory';
  m.dev_ui = { enabled: devUi, users: c.dev_ui.users ?? DEFAULT_DEV_USERS };
  // The console's operators: with the development login app on and none configured, its test users.
  const operators = c.console.operators.length
    ? c.console.operators
    : devUi
      ? (m.dev_ui.users as DevUserLike[]).map((u) => u.subject)
      : [];
  m.console = { ...c.console, enabled: c.console.enabled ?? operators.length > 0, operators };
  // With the development login app on, the UI URLs default to its pages instead of the fallbacks.
  const fallback = (p: string) =>
    new URL(
      devUi && ['login', 'consent', 'logout', 'device', 'device/done'].includes(p)
        ? `dev/${p}`
        : `oauth2/fallbacks/${p}`,
      pub,
    ).toString();
  m.urls = {
    ...c.urls,
    self: {
      issuer,
      public: pub,
      admin: withSlash(c.urls.self.admin || `${scheme('admin')}://localhost:${c.serve.admin.port}/`),
    },
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
  const g = c.dsync.google;
  m.dsync = {
    ...c.dsync,
    external_url: (c.dsync.external_url || pub).replace(/\/$/, ''),
    google: {
      ...g,
      auth_url: g.auth_url || 'https://accounts.google.com/o/oauth2/v2/auth',
      token_url: g.token_url || 'https://oauth2.googleapis.com/token',
      api_url: (g.api_url || 'https://admin.googleapis.com').replace(/\/$/, ''),
    },
  };
  return c;
}

/** The test user of the development login page when `dev_ui.users` is empty. */
export const DEFAULT_DEV_USERS = [
  {
    subject: 'ada@example.com',
    password: 'gatehouse-dev',
    claims: { name: 'Ada Lovelace', email: 'ada@example.com', email_verified: true },
  },
];

/** Secrets with the system secrets as the default; callers of a domain use these. */
export function cookieSecrets(c: Pick<Config, 'secrets'>): string[] {
  return c.secrets.cookie.length ? c.secrets.cookie : c.secrets.system;
}
export function paginationSecrets(c: Pick<Config, 'secrets'>): string[] {
  return c.secrets.pagination.length ? c.secrets.pagination : c.secrets.system;
}

/** The configuration with secrets replaced, for logs and `/health` debugging. */
export function redactedConfig(c: Config): Record<string, unknown> {
  const out = structuredClone(c) as Record<string, unknown>;
  for (const l of configLeaves()) {
    if (!l.node.secret) continue;
    const parts = l.path.split('.');
    const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
    let cur: unknown = out;
    for (const p of parts.slice(0, -1)) cur = isObject(cur) ? cur[p] : undefined;
    const last = parts[parts.length - 1] as string;
    if (!isObject(cur)) continue;
    const v = cur[last];
    if (v !== undefined && v !== '' && !(Array.isArray(v) && !v.length)) cur[last] = '[redacted]';
  }
  return out;
}
