/**
 * The configuration's registry. Key paths follow Hydra's (`urls.self.issuer`, `ttl.access_token`,
 * `oauth2.grant.refresh_token.rotation_grace_period`, …) plus gatehouse's own (`db.*`, `worker.*`,
 * `dsync.*`). Each leaf maps to one environment variable: the path upper-cased with `.` → `_`
 * (`URLS_SELF_ISSUER`). The core names no domain's keys: the key tree is made of parts (`ConfigPart`:
 * sections, checks, derived defaults) — the core's (sections.ts) and each face's — which the
 * composition root registers once, in the order of docs/configuration.md (src/config.ts), before
 * any configuration is read; it also adds each part's key tree to `ConfigSpecs` (declaration
 * merging), so that `RawConfig` types every key. The configuration table in docs/configuration.md is
 * checked against `configLeaves()`.
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

export type SpecNode = Leaf | { [key: string]: SpecNode };
/** A part of the key tree: section names to sections. */
export type SpecTree = { [key: string]: SpecNode };
export type LeafExtra = Pick<Leaf, 'aliases' | 'secret'>;

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

export const leaf = <S extends z.ZodType>(
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

export const str = (def: string, description: string, extra: LeafExtra = {}) =>
  leaf('string', z.string().default(def), description, def === '' ? '""' : def, extra);
export const url = (description: string, defaultText = '(derived)', extra: LeafExtra = {}) =>
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
export const hook = (description: string, extra: LeafExtra = {}) =>
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
export const int = (def: number, description: string, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  leaf('int', z.number().int().min(min).max(max).default(def), description, String(def));
export const bool = (def: boolean, description: string) =>
  leaf('bool', z.boolean().default(def), description, String(def));
export const dur = (def: string, description: string) =>
  leaf('duration', durationSchema.prefault(def), description, def);
export const secs = (def: string, description: string, extra: LeafExtra = {}) =>
  leaf('seconds', secondsSchema.prefault(def), description, def === '0' ? '0 (off)' : def, extra);
export const list = (def: string[], description: string, extra: LeafExtra = {}, item: z.ZodType<string> = z.string()) =>
  leaf('list', z.array(item).default(def), description, JSON.stringify(def), extra);
export const oneOf = <const T extends readonly [string, ...string[]]>(values: T, def: T[number], description: string) =>
  leaf('enum', z.enum(values).default(def as never), description, def);

/**
 * A part of the configuration, as the core and each face declare it: its sections, and what is
 * checked and derived once the whole configuration is parsed.
 */
export interface ConfigPart<S extends SpecTree = SpecTree> {
  /** Sections of the key tree; a section that several parts share (`urls`, `db`) is merged key by key. */
  readonly spec: S;
  /** Keys of Hydra's configuration under these sections that gatehouse does not implement (warned, ignored). */
  readonly notImplemented?: readonly string[];
  /** Problems of the parsed values, one line each naming its key. */
  check?(c: RawConfig, o: { needsSecrets: boolean }): string[];
  /** Defaults derived from other keys, written in place; the parts derive in the order they are registered. */
  derive?(c: { -readonly [K in keyof RawConfig]: RawConfig[K] }): void;
}

/**
 * The key tree of each part, by part name: the composition root adds every part's here (`declare
 * module`, src/config.ts), so that `RawConfig` holds every key of every part.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging, one part at a time
export interface ConfigSpecs {}

type Intersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
type Out<N> = N extends Leaf<infer S> ? z.output<S> : { readonly [K in keyof N]: Out<N[K]> };

/** Parsed configuration, before derived defaults. Durations are milliseconds. */
export type RawConfig = Out<Intersection<ConfigSpecs[keyof ConfigSpecs]>>;

interface Registered {
  spec: SpecTree;
  schema: z.ZodType;
  parts: readonly ConfigPart[];
  notImplemented: readonly string[];
}

/** Filled once by `registerConfig`. */
const registry: { current?: Registered } = {};

const isLeaf = (n: SpecNode): n is Leaf => (n as Leaf).leaf === true;

function merge(into: SpecTree, from: SpecTree, path: string[]): void {
  for (const [k, node] of Object.entries(from)) {
    const have = into[k];
    const at = [...path, k].join('.');
    if (have === undefined) {
      const copy: SpecTree = {};
      if (!isLeaf(node)) merge(copy, node, [...path, k]);
      into[k] = isLeaf(node) ? node : copy;
    } else if (isLeaf(have) || isLeaf(node)) throw new Error(`config key ${at} is declared by two parts`);
    else merge(have, node, [...path, k]);
  }
}

function build(node: SpecNode): z.ZodType {
  if (isLeaf(node)) return node.schema;
  const shape: Record<string, z.ZodType> = {};
  for (const [k, child] of Object.entries(node)) shape[k] = build(child);
  return z.strictObject(shape).prefault({});
}

/**
 * Registers the parts of the configuration (the composition root does, once): `order` names the
 * sections in the order of docs/configuration.md, whose table is generated in it.
 */
export function registerConfig(parts: readonly ConfigPart[], order: readonly string[]): void {
  if (registry.current) throw new Error('the configuration parts are registered once, by the composition root');
  const merged: SpecTree = {};
  for (const p of parts) merge(merged, p.spec, []);
  const unordered = Object.keys(merged).filter((k) => !order.includes(k));
  if (unordered.length) throw new Error(`config sections without a place in the order: ${unordered.join(', ')}`);
  const spec: SpecTree = {};
  for (const k of order) {
    const section = merged[k];
    if (!section) throw new Error(`config section ${k} is ordered but no part declares it`);
    spec[k] = section;
  }
  registry.current = { spec, schema: build(spec), parts, notImplemented: parts.flatMap((p) => p.notImplemented ?? []) };
}

/** The registered parts, their merged key tree and its schema. */
export function registeredConfig(): Registered {
  if (!registry.current) {
    throw new Error('no configuration parts are registered: import src/config.ts (the composition root) first');
  }
  return registry.current;
}

export interface LeafInfo {
  path: string;
  env: string[];
  node: Leaf;
}

export function configLeaves(node: SpecNode = registeredConfig().spec, prefix: string[] = []): LeafInfo[] {
  if (isLeaf(node)) {
    const path = prefix.join('.');
    return [{ path, env: [prefix.join('_').toUpperCase(), ...(node.aliases ?? [])], node }];
  }
  return Object.entries(node).flatMap(([k, child]) => configLeaves(child, [...prefix, k]));
}
