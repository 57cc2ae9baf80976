/**
 * Loads configuration from an optional YAML/JSON file and the environment (env wins), validates
 * it with the zod schema of the registered parts (schema.ts), runs their checks and fills in their
 * derived defaults (Hydra's). Every problem is reported as one
 * line that names the key (and the environment variable or file it came from).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { ConfigError } from './errors.ts';
import { HYDRA_FILE_ONLY, hydraEntryFor } from './hydra-keys.ts';
import { configLeaves, type LeafInfo, type RawConfig, registeredConfig } from './schema.ts';

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
  let cur: unknown = registeredConfig().spec;
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
 * Removes the keys of `input` that are Hydra's but not gatehouse's (the parts' `notImplemented`) and
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
    if (hydraEntryFor(registeredConfig().notImplemented, p.join('.'))) {
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
  for (const e of registeredConfig().notImplemented) {
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

  const { schema, parts } = registeredConfig();
  const parsed = schema.safeParse(input);
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
  const needsSecrets = opts.needsSecrets ?? true;
  const more = parts.flatMap((p) => p.check?.(cfg, { needsSecrets }) ?? []);
  if (more.length) throw new ConfigError(more);
  for (const p of parts) p.derive?.(cfg as { -readonly [K in keyof Config]: Config[K] });
  return cfg;
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
  const prefixes = Object.keys(registeredConfig().spec).map((k) => `${envName(k)}_`);
  const hydra = registeredConfig()
    .notImplemented.filter((e) => !HYDRA_FILE_ONLY.has(e))
    .map((e) => ({ e, n: envName(e) }));
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
