/**
 * The enterprise extension of a SCIM user (RFC 7643 §4.3; ory/polis#1318): its attributes become
 * fields of the user record and of its events, follow PUT and PATCH, and are filterable through
 * SCIM filters and the management API, on indexed columns.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../../../src/core/db/tx.ts';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer, v1, withStoredEvents } from '../../helpers/dsync.ts';

const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

let s: TestServer;
let dir: DirectoryRecord;
let c: ReturnType<typeof scimClient>;

beforeAll(async () => {
  s = await startDsyncServer();
  dir = await createDirectory(s);
  c = scimClient(s, dir);
});
afterAll(async () => {
  await s?.close();
});

/** An Entra ID-shaped user with the enterprise extension. */
const entraUser = (n: number, department: string, extra: Record<string, unknown> = {}) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE],
  userName: `person${n}@contoso.example`,
  active: true,
  name: { givenName: `Person${n}`, familyName: 'Contoso' },
  emails: [{ primary: true, type: 'work', value: `person${n}@contoso.example` }],
  [ENTERPRISE]: { employeeNumber: `E-${n}`, department, organization: 'Contoso', ...extra },
});

const ids = (body: { Resources: Array<{ id: string }> }) => body.Resources.map((u) => u.id).sort();

describe('the enterprise extension', () => {
  it('is in the user record and its events, and follows PATCH', async () => {
    const { value: r, events } = await withStoredEvents(s, dir.id, () =>
      c(
        'POST',
        '/Users',
        entraUser(1, 'Sales', { costCenter: 'CC-1', division: 'EMEA', manager: { value: 'boss-1' } }),
      ),
    );
    expect(r.status).toBe(201);
    expect(r.body[ENTERPRISE]).toEqual({
      employeeNumber: 'E-1',
      department: 'Sales',
      organization: 'Contoso',
      costCenter: 'CC-1',
      division: 'EMEA',
      manager: { value: 'boss-1' },
    });
    expect(events[0]?.data).toMatchObject({
      employee_number: 'E-1',
      cost_center: 'CC-1',
      organization: 'Contoso',
      division: 'EMEA',
      department: 'Sales',
      manager_id: 'boss-1',
    });
    const record = await v1(s)('GET', `/users/${r.body.id}?directoryId=${dir.id}`);
    expect(record.body.data).toMatchObject({ department: 'Sales', manager_id: 'boss-1', employee_number: 'E-1' });

    const patched = await withStoredEvents(s, dir.id, () =>
      c('PATCH', `/Users/${r.body.id}`, {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'replace', path: `${ENTERPRISE}:department`, value: 'Marketing' },
          { op: 'remove', path: `${ENTERPRISE}:costCenter` },
        ],
      }),
    );
    expect(patched.value.status).toBe(200);
    expect(patched.events[0]?.data).toMatchObject({ department: 'Marketing' });
    expect(patched.events[0]?.data).not.toHaveProperty('cost_center');
    const { rows } = await sql<{ department: string; cost_center: string | null }>`
      select department, cost_center from dsync_users where id = ${r.body.id}`.execute(s.container.db);
    expect(rows).toEqual([{ department: 'Marketing', cost_center: null }]);
  });

  it('a user without it has none of its fields', async () => {
    const { value: r, events } = await withStoredEvents(s, dir.id, () =>
      c('POST', '/Users', { userName: 'plain@contoso.example' }),
    );
    expect(r.status).toBe(201);
    for (const k of ['employee_number', 'cost_center', 'organization', 'division', 'department', 'manager_id'])
      expect(events[0]?.data, k).not.toHaveProperty(k);
  });

  it('filters users by it: SCIM filters by the extension URN, the management API by the record names', async () => {
    const d = await createDirectory(s, { tenant: 'filters' });
    const k = scimClient(s, d);
    const made: Record<string, string> = {};
    for (const [n, dept] of [
      [10, 'Engineering'],
      [11, 'engineering'],
      [12, 'Sales'],
    ] as const)
      made[n] = (await k('POST', '/Users', entraUser(n, dept, { manager: { value: `m-${n % 2}` } }))).body.id;
    await k('POST', '/Users', { userName: 'none@contoso.example' });

    const scim = async (filter: string) =>
      (await k('GET', `/Users?filter=${encodeURIComponent(filter)}`)).body as { Resources: Array<{ id: string }> };
    expect(ids(await scim(`${ENTERPRISE}:department eq "ENGINEERING"`))).toEqual([made[10], made[11]].sort());
    expect(ids(await scim(`${ENTERPRISE}:manager.value eq "m-0"`))).toEqual([made[10], made[12]].sort());
    expect(ids(await scim(`${ENTERPRISE}:employeeNumber eq "E-12"`))).toEqual([made[12]]);
    expect(ids(await scim(`${ENTERPRISE}:employeeNumber eq "e-12"`))).toEqual([]);
    expect(ids(await scim(`${ENTERPRISE}:department pr and not (${ENTERPRISE}:department eq "sales")`))).toEqual(
      [made[10], made[11]].sort(),
    );

    const api = async (q: string) =>
      ((await v1(s)('GET', `/users?directoryId=${d.id}&${q}`)).body.data as Array<{ id: string }>)
        .map((u) => u.id)
        .sort();
    expect(await api('department=engineering')).toEqual([made[10], made[11]].sort());
    expect(await api('department=Engineering&manager_id=m-1')).toEqual([made[11]]);
    expect(await api('organization=contoso')).toHaveLength(3);
    expect(await api('employee_number=E-10')).toEqual([made[10]]);
    expect(await api('division=nowhere')).toEqual([]);
  });

  it('filters on an index of its column, not by reading every user of the directory', async () => {
    const plans = await withTx(s.container.db, async (trx) => {
      // Whatever the table's size, an index that fits is then taken; none fitting shows as a Seq Scan.
      await sql`set local enable_seqscan = off`.execute(trx);
      const out: string[] = [];
      for (const [column, cond] of [
        ['department', sql`lower(department) = 'sales'`],
        ['manager', sql`manager_id = 'm-0'`],
        ['employee_number', sql`employee_number = 'E-1'`],
      ] as const) {
        const { rows } = await sql<Record<string, string>>`
          explain select id from dsync_users where directory_id = ${dir.id} and ${cond}`.execute(trx);
        out.push(`${column}: ${rows.map((r) => Object.values(r)[0]).join(' ')}`);
      }
      return out;
    });
    expect(plans[0]).toMatch(/dsync_users_department_idx/);
    expect(plans[1]).toMatch(/dsync_users_manager_idx/);
    expect(plans[2]).toMatch(/dsync_users_employee_number_idx/);
  });
});
