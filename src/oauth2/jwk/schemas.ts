/** Request bodies of the JSON Web Key admin API (Hydra's createJsonWebKeySet, setJsonWebKeySet, setJsonWebKey). */
import { z } from 'zod';
import { badRequest } from '../../core/errors.ts';

const jsonObject = z.record(z.string(), z.unknown());

/** A string field as Go decodes it: absent or null is the empty string. */
const goString = z
  .string()
  .nullish()
  .transform((v) => v ?? '');

/** `{alg, use, kid}`; Hydra defaults `use` and `kid` when they are empty (absent or null). */
export const createJsonWebKeySetBody = z.object({
  alg: goString,
  use: goString,
  kid: goString,
});

export const jsonWebKeySetBody = z.object({ keys: z.array(jsonObject) });

export const jsonWebKeyBody = jsonObject;

/** Parses a request body or throws Hydra's 400 "Unable to decode the request body: …". */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const r = schema.safeParse(body ?? {});
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
    throw badRequest(`Unable to decode the request body: ${where}${issue?.message ?? 'invalid body'}`);
  }
  return r.data;
}
