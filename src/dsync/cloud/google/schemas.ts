/**
 * Shapes of Google Workspace sync: Google's token and Directory API answers (only what gatehouse
 * relies on is checked; objects keep every other key, since they are stored as `raw`), the HTTP
 * query parameters of the authorization routes and the payloads of the sync jobs.
 */
import { z } from 'zod';
import { firstValue } from '../../../core/http/params.ts';

/** RFC 6749 §5.1 as Google answers it (`expires_in` in seconds). */
export const tokenResponse = z.looseObject({
  access_token: z.string().min(1),
  expires_in: z.number().positive().optional(),
  refresh_token: z.string().optional(),
  scope: z.string().optional(),
  token_type: z.string().optional(),
  id_token: z.string().optional(),
});

/** RFC 6749 §5.2 error body. */
export const tokenErrorBody = z.looseObject({ error: z.unknown().optional() });

/** Google API error body: `{error: {code, message, status, errors}}`. */
export const apiErrorBody = z.looseObject({
  error: z.looseObject({ status: z.unknown().optional() }).optional(),
});

const withId = z.looseObject({ id: z.string().min(1) });

/** A Directory API user: every user has an id and a primary email. */
export const googleUser = z.looseObject({
  id: z.string().min(1),
  primaryEmail: z.string().min(1),
  name: z.looseObject({ givenName: z.string().optional(), familyName: z.string().optional() }).optional(),
  suspended: z.boolean().optional(),
});
export type GoogleUser = z.infer<typeof googleUser>;

export const googleGroup = z.looseObject({ id: z.string().min(1), name: z.string().optional() });
export type GoogleGroup = z.infer<typeof googleGroup>;

/** A group member: `type` is USER, GROUP (a nested group) or CUSTOMER (everyone in the account). */
export const googleMember = z.looseObject({ id: z.string().min(1), type: z.string().optional() });

/** What the Directory API lists: users, groups, a group's members. */
export type ListKind = 'users' | 'groups' | 'members';

const ITEM_KEY = { users: 'users', groups: 'groups', members: 'members' } as const;
const ITEM_SCHEMA = { users: googleUser, groups: googleGroup, members: googleMember } as const;

export interface ParsedPage {
  items: Array<Record<string, unknown> & { id: string }>;
  nextPageToken: string | undefined;
}

/** A list page; the items key is missing when the page is empty. */
export function listResponse(kind: ListKind): z.ZodType<ParsedPage> {
  const key = ITEM_KEY[kind];
  const items = z.array(ITEM_SCHEMA[kind] as typeof withId).optional();
  return z
    .looseObject({ nextPageToken: z.string().optional() })
    .and(z.looseObject({ [key]: items }))
    .transform((v) => ({
      items: ((v as Record<string, unknown>)[key] ?? []) as ParsedPage['items'],
      nextPageToken: v.nextPageToken as string | undefined,
    }));
}

const text = z.preprocess(firstValue, z.string().max(4096).optional());

/** `GET /api/scim/oauth/authorize?directoryId=` */
export const authorizeQuery = z.object({ directoryId: text, token: text });

/** `GET /api/scim/oauth/callback?code&state` (or Google's `error` when the admin declined). */
export const callbackQuery = z.object({ code: text, state: text, error: text });

/** `dsync_cloud_sync`: one directory. */
export const cloudSyncPayload = z.object({ directoryId: z.uuid() });

/** `dsync_cloud_sync_sweep`: from the crontab (`{}`: the directories that are due) or on demand (`force`: all). */
export const cloudSyncSweepPayload = z.object({ force: z.boolean().optional() });
