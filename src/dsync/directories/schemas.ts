/** Inputs of the directory operations (Jackson `directories.create/update`). */
import { z } from 'zod';

/** Google Workspace groups to sync, by email or id (at most 500; empty: all). */
const googleGroups = z.array(z.string().trim().min(1).max(255)).max(500);

const url = z
  .string()
  .refine((v) => v === '' || (URL.canParse(v) && /^https?:$/.test(new URL(v).protocol)), 'must be an http(s) URL');

/** Optional fields of `create`; tenant, product and type are checked first, in Jackson's order. */
export const createDirectorySchema = z.object({
  name: z.string().nullish(),
  webhook_url: url.nullish(),
  webhook_secret: z.string().nullish(),
  log_webhook_events: z.boolean().nullish(),
  google_domain: z.string().max(255).nullish(),
  google_access_token: z.string().nullish(),
  google_refresh_token: z.string().nullish(),
  google_groups: googleGroups.nullish(),
});

/** `update` copies only these keys, and only when present (Jackson's whitelist). */
export const updateDirectorySchema = z.object({
  name: z.string().optional(),
  log_webhook_events: z.boolean().optional(),
  deactivated: z.boolean().optional(),
  webhook: z.object({ endpoint: url.nullish(), secret: z.string().nullish() }).optional(),
  webhook_url: url.nullish(),
  webhook_secret: z.string().nullish(),
  google_domain: z.string().max(255).optional(),
  google_access_token: z.string().optional(),
  google_refresh_token: z.string().optional(),
  google_groups: googleGroups.optional(),
});

export type UpdateDirectoryInput = z.input<typeof updateDirectorySchema>;

/** The first problem of a zod error as one sentence (`Invalid value for webhook_url: must be …`). */
export function describeIssue(e: z.ZodError): string {
  const i = e.issues[0];
  return i ? `Invalid value for ${i.path.join('.') || 'body'}: ${i.message}.` : 'Invalid input.';
}
