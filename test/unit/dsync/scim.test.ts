/** Pure SCIM logic: filter parsing, PATCH normalisation and application, attribute extraction. */
import { describe, expect, it } from 'vitest';
import { userAttributes, userRaw } from '../../../src/dsync/scim/attributes.ts';
import { attributePath, parseScimFilter } from '../../../src/dsync/scim/filter.ts';
import { applyPatch, explicitEmail, patchOperations, userOperations } from '../../../src/dsync/scim/patch.ts';

const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

describe('parseScimFilter', () => {
  it('maps userName eq to userName or email, case-insensitive', () => {
    expect(parseScimFilter('userName eq "A@x.com"', 'users')).toEqual({
      kind: 'or',
      items: [
        {
          kind: 'cmp',
          field: { kind: 'column', column: 'user_name', exact: false, type: 'text' },
          op: 'eq',
          value: 'A@x.com',
        },
        {
          kind: 'cmp',
          field: { kind: 'column', column: 'email', exact: false, type: 'text' },
          op: 'eq',
          value: 'A@x.com',
        },
      ],
    });
  });

  it('treats attribute names case-insensitively and ids as case-exact', () => {
    expect(parseScimFilter('EXTERNALID eq "X"', 'users')).toMatchObject({
      field: { column: 'external_id', exact: true },
    });
    expect(parseScimFilter('id eq "X"', 'groups')).toMatchObject({ field: { column: 'id', exact: true } });
    expect(parseScimFilter('displayname eq "X"', 'groups')).toMatchObject({ field: { column: 'name', exact: false } });
  });

  it('strips the core schema URN and keeps extension URNs whole', () => {
    expect(attributePath('urn:ietf:params:scim:schemas:core:2.0:User:userName')).toEqual(['userName']);
    expect(attributePath(`${ENTERPRISE}:manager.value`)).toEqual([ENTERPRISE, 'manager', 'value']);
  });

  it('turns value paths into an element predicate, and members filters into membership checks', () => {
    expect(parseScimFilter('emails[type eq "work" and value co "@x"]', 'users')).toMatchObject({
      kind: 'any',
      array: ['emails'],
      where: { kind: 'and', items: [{ field: { kind: 'elem', path: ['type'] } }, { op: 'co' }] },
    });
    expect(parseScimFilter('members[value eq "u1"]', 'groups')).toEqual({
      kind: 'members',
      where: { kind: 'cmp', field: { kind: 'member' }, op: 'eq', value: 'u1' },
    });
    expect(parseScimFilter('members eq "u1"', 'groups')).toMatchObject({ kind: 'members' });
  });

  it.each([
    'userName eq',
    'userName eq unquoted',
    "userName eq 'single'",
    'userName zz "a"',
    'userName co 5',
    'active eq "maybe"',
    'active gt true',
    '__proto__.x eq "1"',
    'a.constructor eq "1"',
    'emails[type eq "a"][value eq "b"]',
    'members[display eq "x"]',
    '(a eq "1"',
    `${'(a eq "1" or '.repeat(40)}a eq "1"${')'.repeat(40)}`,
    'x'.repeat(3000),
  ])('refuses %j with 400 invalidFilter', (f) => {
    let err: unknown;
    try {
      parseScimFilter(f, f.startsWith('members') ? 'groups' : 'users');
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ status: 400, code: 'invalidFilter', family: 'scim' });
  });
});

describe('PATCH', () => {
  const base = {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'a@x.com',
    name: { givenName: 'A', familyName: 'B' },
    emails: [{ value: 'a@x.com', type: 'work', primary: true }],
    active: true,
    id: 'u1',
  };
  const run = (Operations: unknown[]) => applyPatch(base, userOperations(patchOperations({ Operations })));

  it('lower-cases ops and turns "True"/"False" into booleans', () => {
    expect(patchOperations({ Operations: [{ op: 'REPLACE', path: 'active', value: 'False' }] })).toEqual([
      { op: 'replace', path: 'active', value: 'False' },
    ]);
    expect(run([{ op: 'Replace', path: 'active', value: 'False' }]).active).toBe(false);
    expect(run([{ op: 'replace', value: { active: 'TRUE' } }]).active).toBe(true);
  });

  it('splits a path-less value map into one operation per key, filter-path keys included', () => {
    const r = run([{ op: 'replace', value: { 'name.givenName': 'Z', 'emails[type eq "work"].value': 'z@x.com' } }]);
    expect(r.name).toEqual({ givenName: 'Z', familyName: 'B' });
    expect(r.emails).toEqual([{ value: 'z@x.com', type: 'work', primary: true }]);
  });

  it('drops password and id, wherever they are sent', () => {
    const r = run([
      { op: 'replace', path: 'password', value: 'p1' },
      { op: 'replace', value: { password: 'p2', id: 'other', title: 'T' } },
    ]);
    expect(r).toEqual({ ...base, title: 'T' });
  });

  it('does not mutate its input and does not touch Object.prototype', () => {
    const copy = structuredClone(base);
    run([{ op: 'add', path: 'nickName', value: 'n' }]);
    expect(base).toEqual(copy);
    expect(() => patchOperations({ Operations: [{ op: 'add', path: 'constructor.prototype.x', value: 1 }] })).toThrow();
    expect(() => patchOperations({ Operations: [{ op: 'add', value: { __proto__: { x: 1 } } }] })).not.toThrow();
    expect(() => patchOperations(JSON.parse('{"Operations":[{"op":"add","value":{"__proto__":{"x":1}}}]}'))).toThrow();
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('treats a remove by filter on a missing attribute as a no-op', () => {
    expect(run([{ op: 'remove', path: 'phoneNumbers[type eq "fax"]' }])).toEqual(base);
  });

  it('knows Jackson’s explicit email path', () => {
    expect(
      explicitEmail(
        patchOperations({ Operations: [{ op: 'Replace', path: 'emails[type eq "work"].value', value: 'w@x' }] }),
      ),
    ).toBe('w@x');
  });
});

describe('user attributes', () => {
  it('takes the primary email, else the first, else the userName', () => {
    expect(userAttributes({ userName: 'u', emails: [{ value: 'a' }, { value: 'b', primary: true }] }).email).toBe('b');
    expect(userAttributes({ userName: 'u', emails: [{ value: 'a' }, { value: 'b' }] }).email).toBe('a');
    expect(userAttributes({ userName: 'u' }).email).toBe('u');
  });

  it('keeps the body as raw, without password, with the id last', () => {
    expect(userRaw({ id: 'client', userName: 'u', password: 'p', active: 'False' }, 'server')).toEqual({
      id: 'server',
      userName: 'u',
      active: false,
    });
    expect(Object.keys(userRaw({ userName: 'u' }, 'i'))).toEqual(['userName', 'id']);
    expect(userRaw({ userName: 'u', rawAttributes: { a: 1 } }, 'i')).toEqual({ a: 1, id: 'i' });
  });
});
