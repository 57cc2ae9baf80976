/**
 * Hydra's `TrustOAuth2JwtGrantIssuer` body and `TrustedOAuth2JwtGrantIssuer` response
 * (https://www.ory.sh/docs/hydra/reference/api). Decoding follows Go's encoding/json into Hydra's struct: unknown keys
 * are ignored, `null` leaves a field empty, a value of the wrong type is a 400 with `error: "error"`.
 */
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import { rfc3339 } from '../sessions/schemas.ts';
import type { TrustedIssuer } from '../store/trust.ts';

const str = z
  .string()
  .nullish()
  .transform((v) => v ?? '');

export const trustBody = z.looseObject({
  issuer: str,
  subject: str,
  allow_any_subject: z
    .boolean()
    .nullish()
    .transform((v) => v ?? false),
  scope: z
    .array(z.string())
    .nullish()
    .transform((v) => v ?? []),
  jwk: z
    .record(z.string(), z.unknown())
    .nullish()
    .transform((v) => v ?? {}),
  expires_at: z
    .string()
    .nullish()
    .transform((v, ctx) => {
      if (v == null) return undefined;
      const t = Date.parse(v);
      if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(v) || Number.isNaN(t)) {
        ctx.addIssue({ code: 'custom', message: `parsing time ${JSON.stringify(v)} as RFC 3339 failed` });
        return z.NEVER;
      }
      return new Date(t);
    }),
});

export type TrustBody = z.output<typeof trustBody>;

/** Go's json decoder errors come back as `{"error":"error","error_description":"<why>"}`. */
export function decodeTrustBody(input: unknown): TrustBody {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new AppError({ status: 400, code: 'error', description: 'The request body must be a JSON object.' });
  }
  const r = trustBody.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const at = issue?.path.length ? ` at '${issue.path.join('.')}'` : '';
  throw new AppError({
    status: 400,
    code: 'error',
    description: `Unable to decode the request body: ${issue?.message ?? 'invalid input'}${at}`,
  });
}

export const renderTrustedIssuer = (t: TrustedIssuer) => ({
  id: t.id,
  issuer: t.issuer,
  subject: t.subject,
  allow_any_subject: t.allowAnySubject,
  scope: t.scope,
  public_key: { set: t.keySet, kid: t.keyId },
  created_at: rfc3339(t.createdAt),
  expires_at: rfc3339(t.expiresAt),
});
