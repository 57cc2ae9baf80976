/**
 * Loads configuration from an optional YAML/JSON file and the environment (env wins), validates
 * it with the zod schema and fills in Hydra's derived defaults. Every problem is reported as one
 * line that names the key (and the environment variable or file it came from).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { configLeaves, configSchema, type LeafInfo, type RawConfig } from './schema.ts';

export type Config = RawConfig;

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.map((p) => `config error: ${p}`).join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export interface LoadOptions {
  file?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Values applied last (tests, CLI flags), as dotted paths. */
  overrides?: Record<string, unknown>;
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

function describeIssue(issue: z.core.$ZodIssue, sources: Map<string, string>): string {
  const path = issue.path.join('.');
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => `${path ? `${path}.` : ''}${k}: unknown key`).join('\n');
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
  const cfg = structuredClone(parsed.data) as Config;
  const more = crossChecks(cfg);
  if (more.length) throw new ConfigError(more);
  return deriveDefaults(cfg);
}

const FIVE_MINUTES = 5 * 60_000;
/** Claims of JWT access tokens that the stateless marker claim may not replace. */
const RESERVED_JWT_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'client_id', 'scp', 'scope', 'ext'];
const DAY = 86_400_000;

function crossChecks(c: Config): string[] {
  const out: string[] = [];
  if (c.dsn !== 'memory' && c.secrets.system.length === 0) {
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
  ] as const) {
    if (c.ttl[key] <= 0) out.push(`ttl.${key}: must be a positive duration`);
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

const withSlash = (u: string) => (u.endsWith('/') ? u : `${u}/`);

function deriveDefaults(c: Config): Config {
  const m = c as { -readonly [K in keyof Config]: any };
  const issuer = c.urls.self.issuer || `http://localhost:${c.serve.public.port}/`;
  const pub = withSlash(c.urls.self.public || issuer);
  const fallback = (p: string) => new URL(`oauth2/fallbacks/${p}`, pub).toString();
  m.urls = {
    ...c.urls,
    self: { issuer, public: pub, admin: withSlash(c.urls.self.admin || `http://localhost:${c.serve.admin.port}/`) },
    login: c.urls.login || fallback('login'),
    registration: c.urls.registration || c.urls.login || fallback('login'),
    consent: c.urls.consent || fallback('consent'),
    logout: c.urls.logout || fallback('logout'),
    error: c.urls.error || fallback('error'),
    post_logout_redirect: c.urls.post_logout_redirect || fallback('logout/callback'),
  };
  if (!c.dsync.external_url) m.dsync = { ...c.dsync, external_url: pub.replace(/\/$/, '') };
  else m.dsync = { ...c.dsync, external_url: c.dsync.external_url.replace(/\/$/, '') };
  const g = c.dsync.google;
  m.dsync.google = {
    ...g,
    auth_url: g.auth_url || 'https://accounts.google.com/o/oauth2/v2/auth',
    token_url: g.token_url || 'https://oauth2.googleapis.com/token',
    api_url: (g.api_url || 'https://admin.googleapis.com').replace(/\/$/, ''),
  };
  return c;
}

/** Secrets with the system secrets as the default; callers of a domain use these. */
export function cookieSecrets(c: Config): string[] {
  return c.secrets.cookie.length ? c.secrets.cookie : c.secrets.system;
}
export function paginationSecrets(c: Config): string[] {
  return c.secrets.pagination.length ? c.secrets.pagination : c.secrets.system;
}

/** The configuration with secrets replaced, for logs and `/health` debugging. */
export function redactedConfig(c: Config): Record<string, unknown> {
  const out = structuredClone(c) as Record<string, unknown>;
  for (const l of configLeaves()) {
    if (!l.node.secret) continue;
    const parts = l.path.split('.');
    let cur: any = out;
    for (const p of parts.slice(0, -1)) cur = cur?.[p];
    const last = parts[parts.length - 1] as string;
    if (cur && cur[last] !== undefined && cur[last] !== '' && !(Array.isArray(cur[last]) && !cur[last].length)) {
      cur[last] = '[redacted]';
    }
  }
  return out;
}
