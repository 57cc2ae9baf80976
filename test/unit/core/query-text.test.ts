/**
 * The SQL text a trace shows (db.query.text): the directory writes' statements carry their values
 * as literals (src/dsync/store/steps.ts), and a span must show none of them — an e-mail address or
 * a name in a trace backend is personal data where it does not belong.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { queryTextOf } from '../../../src/core/observability/tracing.ts';
import * as steps from '../../../src/dsync/store/steps.ts';
import type { DsyncUser } from '../../../src/dsync/types.ts';

const MARK = '\u24e9'; // ⓩ: in no statement's own text, so any occurrence is a value that leaked
const value = fc.string({ unit: 'binary', maxLength: 30 }).filter((v) => !v.includes('\u0000') && v.isWellFormed());

describe('queryTextOf', () => {
  it('replaces every literal of a directory write with ?, whatever the values hold', () => {
    fc.assert(
      fc.property(value, value, value, (a, b, c) => {
        const user: DsyncUser = {
          id: `${MARK}${a}`,
          directoryId: '00000000-0000-4000-8000-000000000000',
          userName: `${MARK}${b}`,
          externalId: null,
          email: `${MARK}${c}`,
          firstName: `${MARK}'${a}`,
          lastName: `${MARK}\\${b}`,
          active: true,
          roles: [],
          raw: { userName: `${MARK}${c}`, name: { givenName: `${MARK}"${a}` } },
        };
        for (const stmt of [
          steps.insertUsers(user.directoryId, [user]),
          steps.updateUser(user),
          steps.createCheck(user.directoryId, [`${MARK}${b}`, `${MARK}${c}`], user.id).stmt,
        ]) {
          expect(stmt.sql).toContain(MARK);
          const shown = queryTextOf(stmt.sql);
          expect(shown).not.toContain(MARK);
          expect(shown).toMatch(/dsync_users/);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps quoted identifiers, comments and parameters, and cuts long texts', () => {
    expect(queryTextOf(`select "it's" from "t""x" where a = 'b''c' and d = E'e\\'f' and g = $1 -- user's note`)).toBe(
      `select "it's" from "t""x" where a = ? and d = ? and g = $1 -- user's note`,
    );
    expect(queryTextOf(`select 1 /* don't */ , 'x'`)).toBe(`select 1 /* don't */ , ?`);
    expect(queryTextOf(`select type, 'open`)).toBe('select type, ?');
    expect(queryTextOf(`select ${'a'.repeat(3000)}`)).toHaveLength(2001);
  });
});
