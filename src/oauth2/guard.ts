/** zod parsing for OAuth2 handlers: a bad body or query is a 400 `invalid_request`, never a 500. */
import type { z } from 'zod';
import { oauth2Error } from './oauth-errors.ts';

export function parseOr400<S extends z.ZodType>(schema: S, input: unknown, what = 'body'): z.output<S> {
  const r = schema.safeParse(input ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const where = issue?.path.length ? ` at '${issue.path.join('.')}'` : '';
  throw oauth2Error('invalid_request', {
    hint: `Unable to decode ${what} because: ${issue?.message ?? 'invalid input'}${where}.`,
  });
}
