/** Pure parts of Google Workspace sync: the mapping, change detection, page parsing and the signed state. */
import { describe, expect, it } from 'vitest';
import { keyRing } from '../../../src/core/crypto/keys.ts';
import {
  groupFingerprint,
  mainDomain,
  toGroup,
  toUser,
  unstorable,
  userFingerprint,
} from '../../../src/dsync/cloud/google/mapping.ts';
import { googleUser, listResponse } from '../../../src/dsync/cloud/google/schemas.ts';
import { signState, verifyState } from '../../../src/dsync/cloud/google/state.ts';

const DIR = '6f1c0a52-1d1e-4c55-9a43-3f0d2b1c9e11';

describe('mapping', () => {
  it('maps a Google user to Jackson’s record: primary email, given/family name, active = !suspended', () => {
    const u = googleUser.parse({ id: '1', primaryEmail: 'a@x.test', name: { givenName: 'A' }, suspended: true });
    expect(toUser(DIR, u)).toEqual({
      directoryId: DIR,
      id: '1',
      userName: 'a@x.test',
      externalId: null,
      email: 'a@x.test',
      firstName: 'A',
      lastName: '',
      active: false,
      roles: undefined,
      raw: { id: '1', primaryEmail: 'a@x.test', name: { givenName: 'A' }, suspended: true },
    });
    expect(toUser(DIR, googleUser.parse({ id: '2', primaryEmail: 'b@x.test' })).active).toBe(true);
  });

  it('names a group by its name, else its email, else its id', () => {
    expect(toGroup(DIR, { id: 'g', name: 'Sales', email: 's@x' }).name).toBe('Sales');
    expect(toGroup(DIR, { id: 'g', name: '', email: 's@x' }).name).toBe('s@x');
    expect(toGroup(DIR, { id: 'g' }).name).toBe('g');
  });

  it('detects a change whatever the key order, ignoring etag, lastLoginTime and thumbnailPhotoEtag', () => {
    const a = {
      id: '1',
      etag: 'e1',
      lastLoginTime: 't1',
      thumbnailPhotoEtag: 'p1',
      name: { givenName: 'A', familyName: 'B' },
    };
    const b = {
      name: { familyName: 'B', givenName: 'A' },
      thumbnailPhotoEtag: 'p2',
      lastLoginTime: 't2',
      etag: 'e2',
      id: '1',
    };
    expect(userFingerprint(a)).toBe(userFingerprint(b));
    expect(userFingerprint(a)).not.toBe(userFingerprint({ ...b, name: { givenName: 'C', familyName: 'B' } }));
    expect(userFingerprint(a)).not.toBe(userFingerprint({ ...b, orgUnitPath: '/x' }));
    // Groups ignore only etag.
    expect(groupFingerprint({ id: 'g', etag: '1', name: 'n' })).toBe(
      groupFingerprint({ name: 'n', id: 'g', etag: '2' }),
    );
    expect(groupFingerprint({ id: 'g', lastLoginTime: '1' })).not.toBe(
      groupFingerprint({ id: 'g', lastLoginTime: '2' }),
    );
    // Array order is data.
    expect(userFingerprint({ emails: [1, 2] })).not.toBe(userFingerprint({ emails: [2, 1] }));
  });

  it('refuses objects PostgreSQL or JavaScript cannot hold safely', () => {
    expect(unstorable({ id: '1', name: 'a\u0000b' })).toMatch(/NUL/);
    expect(unstorable(JSON.parse('{"id":"1","__proto__":{"x":1}}'))).toMatch(/reserved/);
    expect(unstorable({ id: '1', name: 'fine' })).toBeUndefined();
  });

  it('picks the domain most primary emails belong to (ties: alphabetical)', () => {
    expect(
      mainDomain(
        new Map([
          ['b.test', 2],
          ['a.test', 5],
        ]),
      ),
    ).toBe('a.test');
    expect(
      mainDomain(
        new Map([
          ['b.test', 2],
          ['a.test', 2],
        ]),
      ),
    ).toBe('a.test');
    expect(mainDomain(new Map())).toBe('');
  });
});

describe('list pages', () => {
  it('reads items and nextPageToken; a page without the items key is empty', () => {
    expect(
      listResponse('users').parse({ kind: 'k', users: [{ id: '1', primaryEmail: 'a@x' }], nextPageToken: 't' }),
    ).toEqual({ items: [{ id: '1', primaryEmail: 'a@x' }], nextPageToken: 't' });
    expect(listResponse('members').parse({ kind: 'admin#directory#members', etag: 'e' })).toEqual({
      items: [],
      nextPageToken: undefined,
    });
  });

  it('refuses a page whose items lack what the sync relies on (rather than deleting what it cannot see)', () => {
    expect(listResponse('users').safeParse({ users: [{ id: '1' }] }).success).toBe(false);
    expect(listResponse('groups').safeParse({ groups: [{ name: 'no id' }] }).success).toBe(false);
    expect(listResponse('members').safeParse({ members: [{ id: '' }] }).success).toBe(false);
  });
});

describe('state', () => {
  const ring = keyRing(['unit-test-secret-0123456789abcdef'], 'state');
  const now = new Date('2026-05-01T12:00:00Z');

  it('carries the directory, and the browser nonce when there is one', async () => {
    const s = await signState(ring, { directoryId: DIR, nonce: 'n1' }, now);
    expect(await verifyState(ring, s, now, 'n1')).toEqual({ directoryId: DIR, nonce: 'n1' });
    await expect(verifyState(ring, s, now, 'n2')).rejects.toThrow(/not bound to this browser/);
    await expect(verifyState(ring, s, now)).rejects.toThrow(/not bound to this browser/);
    const plain = await signState(ring, { directoryId: DIR }, now);
    expect(await verifyState(ring, plain, now)).toEqual({ directoryId: DIR });
  });

  it('lives ten minutes and survives a secret rotation', async () => {
    const s = await signState(ring, { directoryId: DIR }, now);
    expect(await verifyState(ring, s, new Date(now.getTime() + 9 * 60_000))).toEqual({ directoryId: DIR });
    await expect(verifyState(ring, s, new Date(now.getTime() + 11 * 60_000))).rejects.toThrow(/expired/);
    const rotated = keyRing(['new-secret-0123456789abcdefghij', 'unit-test-secret-0123456789abcdef'], 'state');
    expect(await verifyState(rotated, s, now)).toEqual({ directoryId: DIR });
  });
});
