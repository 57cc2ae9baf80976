/**
 * Identity-provider request sequences (test/fixtures/dsync) replayed over the SCIM HTTP routes and
 * through the library's `requests.handle`: the same statuses, bodies, events and stored results.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import { entra, entraLegacy } from '../../fixtures/dsync/entra.ts';
import { okta } from '../../fixtures/dsync/okta.ts';
import { generic, jumpcloud, onelogin } from '../../fixtures/dsync/others.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, snapshot, startDsyncServer, storedEvents } from '../../helpers/dsync.ts';
import { handleTransport, httpTransport, replay, type Scenario } from '../../helpers/replay.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startDsyncServer();
});
afterAll(async () => {
  await s?.close();
});

const withoutFlag = (d: DirectoryRecord): DirectoryRecord => ({
  ...d,
  scim: { ...d.scim, endpoint: (d.scim.endpoint ?? '').replace('/?aadOptscim062020', '') },
});

/** What is stored, without ids and timestamps, so that two directories can be compared. */
async function shape(directoryId: string) {
  const snap = JSON.parse(await snapshot(s, directoryId)) as {
    users: Array<{ user_name: string; email: string; active: boolean; first_name: string; last_name: string }>;
    groups: Array<{ name: string }>;
    members: unknown[];
    events: Array<{ n: number }>;
  };
  return {
    users: snap.users.map((u) => [u.user_name, u.email, u.active, u.first_name, u.last_name]).sort(),
    groups: snap.groups.map((g) => g.name).sort(),
    members: snap.members.length,
    events: snap.events[0]?.n,
  };
}

const cases: Array<[string, Scenario, (d: DirectoryRecord) => DirectoryRecord]> = [
  ['Okta', okta, (d) => d],
  ['Entra ID with ?aadOptscim062020', entra, (d) => d],
  ['Entra ID without the flag', entraLegacy, withoutFlag],
  ['OneLogin', onelogin, (d) => d],
  ['JumpCloud', jumpcloud, (d) => d],
  ['a generic RFC 7644 client', generic, (d) => d],
];

describe.each(cases)('%s', (_name, scenario, endpoint) => {
  it('replays over HTTP and through requests.handle with the same results', async () => {
    const viaHttp = await createDirectory(s, { type: scenario.provider, tenant: 'replay-http' });
    const viaLib = await createDirectory(s, { type: scenario.provider, tenant: 'replay-lib' });
    const a = await replay(scenario, httpTransport(s, endpoint(viaHttp)));
    const b = await replay(scenario, handleTransport(s.container.dsync.controller(), viaLib));
    expect(a.events.map((e) => e.event)).toEqual(b.events.map((e) => e.event));
    expect(await shape(viaHttp.id)).toEqual(await shape(viaLib.id));
    // Every event is stored in order, gap-free, with the directory's tenant and product.
    const stored = await storedEvents(s, viaHttp.id);
    expect(stored.map((e) => e.seq)).toEqual(stored.map((_e, i) => i + 1));
    expect(stored.map(({ seq: _s, ...e }) => e)).toEqual(a.events);
    for (const e of stored) {
      expect(Object.keys(e).slice(0, 4)).toEqual(['event', 'tenant', 'product', 'directory_id']);
      expect(e).toMatchObject({ tenant: 'replay-http', product: 'crm', directory_id: viaHttp.id });
    }
  });
});
