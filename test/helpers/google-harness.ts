/**
 * Shared steps of the Google sync tests: authorizing a directory against the fake, Jackson's test
 * workspace, running one sync and reading the events it stored, and compact event summaries.
 */
import { expect } from 'vitest';
import type { DirectoryRecord, DirectorySyncEvent } from '../../src/dsync/types.ts';
import type { TestServer } from './apps.ts';
import { createDirectory, jacksonEvent, withStoredEvents } from './dsync.ts';
import { type FakeGoogle, type GGroup, type GUser, googleGroup, googleMember, googleUser } from './fake-google.ts';

export const member = (u: { id: string; primaryEmail: string }) => googleMember(u.id, 'USER', u.primaryEmail);

/** `event <group id>:<id>` per event, to compare sequences at a glance. */
export const summary = (events: DirectorySyncEvent[]) =>
  events.map((e) => {
    const d = e.data as { id?: string; group?: { id: string } } | undefined;
    return `${e.event} ${d?.group ? `${d.group.id}:` : ''}${d?.id}`;
  });

/** The record Jackson's events carry for a Google user / group. */
export const userRecord = (u: GUser) => ({
  id: u.id,
  first_name: (u.name as { givenName: string }).givenName,
  last_name: (u.name as { familyName: string }).familyName,
  email: u.primaryEmail,
  active: u.suspended !== true,
  raw: u,
});
export const groupRecord = (g: GGroup) => ({ id: g.id, name: g.name, raw: g });

export function googleHarness(server: () => TestServer, google: () => FakeGoogle) {
  const ctl = () => server().container.dsync.controller();
  const callbackUrl = () => `${server().publicUrl}/api/scim/oauth/callback`;

  /** Authorizes (again) an existing directory, as the admin's consent and the callback would. */
  async function authorize(directoryId: string): Promise<DirectoryRecord> {
    const t = await ctl().google.getAccessToken({ directoryId, code: google().issueCode(callbackUrl()) });
    return server().container.dsync.services.google.setToken({
      directoryId,
      accessToken: t.data?.access_token,
      refreshToken: t.data?.refresh_token,
      expiryDate: t.data?.expiry_date,
    });
  }

  /** A new Google directory, authorized. */
  async function authorizedDirectory(input: Record<string, unknown> = {}): Promise<DirectoryRecord> {
    const d = await createDirectory(server(), { type: 'google', tenant: 'acme', product: 'crm', ...input });
    return authorize(d.id);
  }

  /** Jackson's test workspace: `n` users, engineering (u1, u2) and sales (u1). */
  function workspace(n: number) {
    const fake = google();
    const users = Array.from({ length: n }, (_, i) => googleUser(i + 1));
    const eng = googleGroup('engineering', 'Engineering');
    const sales = googleGroup('sales', 'Sales');
    fake.users = users;
    fake.groups = [eng, sales];
    fake.members = new Map([
      [
        eng.id,
        // A nested group and the whole customer are members too: neither is a user (Jackson took their ids for users').
        [
          member(users[0] as GUser),
          member(users[1] as GUser),
          googleMember(sales.id, 'GROUP'),
          googleMember('C01a2b3c4', 'CUSTOMER'),
        ],
      ],
      // A user from outside the Workspace: a USER member, but no user of the directory.
      [sales.id, [member(users[0] as GUser), googleMember('987654321', 'USER', 'partner@other.test')]],
    ]);
    return { users, eng, sales };
  }

  /** Runs one sync; returns its result and the events it stored, which the callback got in the same order. */
  async function sync(directoryId: string) {
    const received: DirectorySyncEvent[] = [];
    const { value: result, events } = await withStoredEvents(server(), directoryId, () =>
      server().container.dsync.services.google.syncDirectory(directoryId, { callback: (e) => received.push(e) }),
    );
    expect(received.map(jacksonEvent)).toEqual(events);
    return { result, events };
  }

  /** Runs one sync (see `sync`) while the fake answers `failWith`; the fake recovers afterwards. */
  async function syncFailing(directoryId: string, failWith: FakeGoogle['failWith']) {
    google().failWith = failWith;
    try {
      return await sync(directoryId);
    } finally {
      google().failWith = undefined;
    }
  }

  return { ctl, authorize, authorizedDirectory, workspace, sync, syncFailing };
}
