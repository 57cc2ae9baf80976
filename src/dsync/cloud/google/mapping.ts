/**
 * Google Directory objects → the stored users and groups, and the fingerprint
 * that decides whether a stored object changed. A user is `{id, email: primaryEmail,
 * first_name: name.givenName, last_name: name.familyName, active: !suspended, raw: <the Google
 * user>}` with `userName` = the primary email; a group is `{id, name, raw: <the Google group>}`.
 */
import { createHash } from 'node:crypto';
import { unsafeContent } from '../../scim/attributes.ts';
import type { DsyncGroup, DsyncUser, Raw } from '../../types.ts';
import type { GoogleGroup, GoogleUser } from './schemas.ts';

/** Fields that change without the user changing (Jackson ignores the same ones). */
const USER_VOLATILE = ['etag', 'lastLoginTime', 'thumbnailPhotoEtag'];
const GROUP_VOLATILE = ['etag'];

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = canonical((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

function fingerprint(raw: Raw, volatile: string[]): string {
  const copy: Raw = { ...raw };
  for (const k of volatile) delete copy[k];
  return createHash('sha256')
    .update(JSON.stringify(canonical(copy)))
    .digest('base64url');
}

export const userFingerprint = (raw: Raw) => fingerprint(raw, USER_VOLATILE);
export const groupFingerprint = (raw: Raw) => fingerprint(raw, GROUP_VOLATILE);

/** Why a Google object cannot be stored (a NUL character, a prototype key, too deep), if it cannot. */
export const unstorable = (raw: Raw): string | undefined => unsafeContent(raw);

export function toUser(directoryId: string, u: GoogleUser): DsyncUser {
  return {
    directoryId,
    id: u.id,
    userName: u.primaryEmail,
    externalId: null,
    email: u.primaryEmail,
    firstName: u.name?.givenName ?? '',
    lastName: u.name?.familyName ?? '',
    active: u.suspended !== true,
    roles: undefined,
    raw: { ...u },
  };
}

export function toGroup(directoryId: string, g: GoogleGroup): DsyncGroup {
  const name = typeof g.name === 'string' && g.name !== '' ? g.name : typeof g.email === 'string' ? g.email : g.id;
  return { directoryId, id: g.id, name, externalId: null, raw: { ...g } };
}

/** The domain most users' primary emails belong to ('' without users). */
export function mainDomain(counts: Map<string, number>): string {
  let best = '';
  let n = 0;
  for (const [d, c] of counts) if (c > n || (c === n && d < best)) [best, n] = [d, c];
  return best;
}
