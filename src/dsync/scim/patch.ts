/**
 * SCIM PATCH (RFC 7644 §3.5.2) as identity providers really send it. Operations are normalised
 * first — `op` case-insensitive (Entra ID without `?aadOptscim062020` sends `Replace`/`Add`/
 * `Remove`), `"True"`/`"False"` strings for `active` become booleans, `password` is dropped, and a
 * path-less value map (`{op:'replace', value:{active:false, 'name.givenName':'x'}}`) becomes one
 * operation per key — then applied to the raw resource with the `scim-patch` library.
 *
 * Why the normalisation step exists (where `scim-patch` alone fails on real traffic):
 * - it throws on `REPLACE` and other casings it does not list;
 * - in a path-less value map it treats a key like `emails[type eq "work"].value` as a plain
 *   property name instead of a path;
 * - it follows `__proto__`/`constructor` path segments (prototype pollution), so such paths are
 *   refused here before it runs.
 * Everything else (filter paths such as `addresses[type eq "work"].locality` that add the element
 * when missing, URN extension paths, `remove` with and without filters) is the library's.
 */
import { scimPatch } from 'scim-patch';
import { type ScimType, scimError } from '../errors.ts';
import type { Raw } from '../types.ts';
import { activeValue, isObject, unsafeContent } from './attributes.ts';

export type PatchOpName = 'add' | 'replace' | 'remove';

export interface PatchOp {
  op: PatchOpName;
  path?: string;
  value?: unknown;
}

const MAX_OPERATIONS = 1000;
const DANGEROUS_SEGMENT = /(^|[.:[\]\s"])(__proto__|prototype|constructor)($|[.\]\s"])/;
const EMPTY_SEGMENT = /^\.|\.\.|\.$|^\[|:$/;
const SCIM_TYPES = new Set<ScimType>(['invalidSyntax', 'invalidPath', 'noTarget', 'invalidValue', 'mutability']);

/** Refuses paths with empty segments or prototype-reaching names (400 `invalidPath`). */
export function checkPath(path: string): string {
  if (DANGEROUS_SEGMENT.test(path) || EMPTY_SEGMENT.test(path.replace(/\[[^\]]*\]/g, '[]')))
    throw scimError(400, `Invalid path "${path.slice(0, 200)}".`, 'invalidPath');
  return path;
}

const syntax = (detail: string) => scimError(400, detail, 'invalidSyntax');

/** The `Operations` of a PATCH body, validated and with `op` lower-cased. Throws 400 `invalidSyntax`. */
export function patchOperations(body: unknown): PatchOp[] {
  if (!isObject(body) || !Array.isArray(body.Operations))
    throw syntax('The PATCH body must be an object with an "Operations" array.');
  if (body.Operations.length > MAX_OPERATIONS) throw scimError(400, 'Too many operations.', 'tooMany');
  const unsafe = unsafeContent(body.Operations);
  if (unsafe) throw scimError(400, unsafe, 'invalidValue');
  return body.Operations.map((raw, i) => {
    if (!isObject(raw)) throw syntax(`Operation ${i + 1} is not an object.`);
    const op = typeof raw.op === 'string' ? raw.op.trim().toLowerCase() : '';
    if (op !== 'add' && op !== 'replace' && op !== 'remove')
      throw syntax(`Operation ${i + 1} has an invalid "op"; expected add, replace or remove.`);
    if (raw.path !== undefined && raw.path !== null && typeof raw.path !== 'string')
      throw scimError(400, `Operation ${i + 1} has a "path" that is not a string.`, 'invalidPath');
    const path = typeof raw.path === 'string' && raw.path.trim() !== '' ? checkPath(raw.path.trim()) : undefined;
    if (op !== 'remove' && !('value' in raw)) throw syntax(`Operation ${i + 1} (${op}) needs a "value".`);
    return { op, ...(path ? { path } : {}), ...('value' in raw ? { value: raw.value } : {}) };
  });
}

const lastSegment = (path: string) => path.replace(/^urn:ietf:params:scim:schemas:core:2\.0:User:/i, '').toLowerCase();

/**
 * User operations ready for `scim-patch`: path-less maps split per key, `password` and `id`
 * dropped, `active` strings made booleans. Throws 400 on a path-less non-object value or a remove
 * without a path.
 */
export function userOperations(ops: PatchOp[]): PatchOp[] {
  const out: PatchOp[] = [];
  for (const o of ops) {
    if (o.path === undefined) {
      if (o.op === 'remove') throw scimError(400, 'A "remove" operation needs a "path".', 'noTarget');
      if (!isObject(o.value))
        throw scimError(400, 'An operation without "path" needs an object "value".', 'invalidValue');
      for (const [key, value] of Object.entries(o.value)) out.push({ op: o.op, path: checkPath(key), value });
    } else out.push(o);
  }
  return out.flatMap((o) => {
    const key = lastSegment(o.path ?? '');
    if (key === 'password' || key === 'id') return [];
    if (key === 'active' && o.op !== 'remove') {
      const a = activeValue(o.value);
      if (a === undefined) throw scimError(400, 'The attribute "active" must be a boolean.', 'invalidValue');
      return [{ ...o, value: a }];
    }
    if (isObject(o.value) && 'password' in o.value) {
      const { password: _p, ...rest } = o.value;
      return [{ ...o, value: rest }];
    }
    return [o];
  });
}

/** Applies operations to a copy of `raw` with `scim-patch`. Library errors become 400s with their scimType. */
export function applyPatch(raw: Raw, ops: PatchOp[]): Raw {
  const doc = structuredClone(raw);
  try {
    for (const o of ops) {
      try {
        scimPatch(doc as never, [o as never], { mutateDocument: true, treatMissingAsAdd: true });
      } catch (e) {
        // Removing by filter from an attribute that does not exist removes nothing (RFC 7644 §3.5.2.2).
        if (o.op === 'remove' && (e as Error).constructor?.name === 'FilterOnEmptyArray') continue;
        throw e;
      }
    }
  } catch (e) {
    const code = (e as { scimCode?: string }).scimCode as ScimType | undefined;
    const detail = e instanceof Error && e.message ? e.message : 'The operation could not be applied.';
    throw scimError(400, detail.slice(0, 300), code && SCIM_TYPES.has(code) ? code : 'invalidValue');
  }
  return doc;
}

/** Jackson maps this exact path to the user's `email`, whatever the emails array then holds. */
export function explicitEmail(ops: PatchOp[]): string | undefined {
  let email: string | undefined;
  for (const o of ops) {
    if (
      o.op !== 'remove' &&
      o.path?.replace(/\s+/g, ' ') === 'emails[type eq "work"].value' &&
      typeof o.value === 'string'
    )
      email = o.value;
  }
  return email;
}
