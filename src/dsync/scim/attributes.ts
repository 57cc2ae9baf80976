/**
 * SCIM user/group bodies ⇄ the normalised columns (Jackson `extractStandardUserAttributes`).
 * Differences from Jackson, on purpose: `email` is the primary email when one is marked primary
 * (else the first, else `userName`), and Entra ID's legacy `"True"`/`"False"` strings for `active`
 * become booleans, in the record and in `raw`.
 */
import { scimError } from '../errors.ts';
import type { DsyncUser, Raw } from '../types.ts';

const DANGEROUS = new Set(['__proto__', 'prototype', 'constructor']);

export const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What makes a body unsafe to store: a key that could reach an object prototype (`__proto__`,
 * `constructor`, …), a NUL character (PostgreSQL text and jsonb refuse it; one such raw resource
 * would break every filter of its directory), or nesting deeper than 64 levels.
 */
export function unsafeContent(v: unknown, depth = 0): string | undefined {
  if (depth > 64) return 'The request body is nested too deeply.';
  if (typeof v === 'string') return v.includes('\u0000') ? 'The request body contains a NUL character.' : undefined;
  if (Array.isArray(v)) {
    for (const x of v) {
      const r = unsafeContent(x, depth + 1);
      if (r) return r;
    }
    return undefined;
  }
  if (!isObject(v)) return undefined;
  for (const [k, x] of Object.entries(v)) {
    if (DANGEROUS.has(k)) return 'The request body contains a reserved attribute name.';
    const r = unsafeContent(k, depth + 1) ?? unsafeContent(x, depth + 1);
    if (r) return r;
  }
  return undefined;
}

/** A SCIM resource body: a JSON object without prototype-reaching keys. Throws 400 `invalidSyntax`. */
export function resourceBody(body: unknown): Raw {
  if (!isObject(body)) throw scimError(400, 'The request body must be a JSON object.', 'invalidSyntax');
  const unsafe = unsafeContent(body);
  if (unsafe) throw scimError(400, unsafe, 'invalidValue');
  return body;
}

/** `active` as a boolean: booleans, and the strings "true"/"false" in any case (Entra ID without the flag). */
export function activeValue(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') {
    const l = v.trim().toLowerCase();
    if (l === 'true') return true;
    if (l === 'false') return false;
  }
  return undefined;
}

const str = (v: unknown): string | null =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : null;

/** The normalised columns of a user: a stored user without its keys and raw body. */
export type UserAttributes = Omit<DsyncUser, 'directoryId' | 'id' | 'raw'>;

function primaryEmail(emails: unknown): string | null {
  if (!Array.isArray(emails)) return null;
  const entries = emails.filter(isObject);
  const primary = entries.find((e) => e.primary === true || activeValue(e.primary) === true) ?? entries[0];
  return primary ? str(primary.value) : null;
}

/** Normalised attributes of a SCIM user body. Throws 400 on an `active` that is not a boolean. */
export function userAttributes(body: Raw): UserAttributes {
  const name = isObject(body.name) ? body.name : {};
  const userName = str(body.userName);
  let active = true;
  if ('active' in body && body.active !== undefined && body.active !== null) {
    const a = activeValue(body.active);
    if (a === undefined) throw scimError(400, 'The attribute "active" must be a boolean.', 'invalidValue');
    active = a;
  }
  const roles = body.roles
    ? typeof body.roles === 'string'
      ? body.roles.split(',')
      : Array.isArray(body.roles)
        ? body.roles
        : [body.roles]
    : undefined;
  return {
    userName,
    externalId: str(body.externalId),
    email: primaryEmail(body.emails) ?? userName,
    firstName: str(name.givenName) ?? '',
    lastName: str(name.familyName) ?? '',
    active,
    roles,
  };
}

/** The raw resource to store: the body without `password`, `active` as a boolean, and `id` set. */
export function userRaw(body: Raw, id: string): Raw {
  const source = 'rawAttributes' in body && isObject(body.rawAttributes) ? body.rawAttributes : body;
  const { password: _password, ...raw } = source;
  if (source === body) delete raw.rawAttributes;
  const a = activeValue(raw.active);
  if (a !== undefined) raw.active = a;
  raw.id = id;
  return raw;
}
