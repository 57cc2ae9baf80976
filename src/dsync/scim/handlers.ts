/**
 * SCIM v2 routes for identity providers (Jackson pages/api/scim/v2.0/[...directory].ts):
 * `/api/scim/v2.0/{directoryId}/{Users|Groups}[/{resourceId}]`, any method, `Authorization: Bearer
 * <scim.secret>`. Entra ID's `?aadOptscim062020` query is accepted and ignored. Errors render as
 * RFC 7644 SCIM errors (the path prefix sets the error family before the body is parsed). Bodies
 * are read as JSON with either `application/scim+json` or `application/json`.
 */

import type { Context } from 'koa';
import type { FailedAuthTarget } from '../../core/http/auth-failures.ts';
import type { Registrar } from '../../core/http/routes.ts';
import { authToken, param } from '../v1-handlers.ts';
import type { ScimService } from './service.ts';

export const SCIM_PREFIX = '/api/scim/v2.0';

/** The failed-authentication limiter counts SCIM bearer checks per directory id (core/http/auth-failures.ts). */
export const scimFailedAuthTarget: FailedAuthTarget = (ctx) => {
  const id = (ctx.params as { directoryId?: string } | undefined)?.directoryId;
  return { kind: 'scim', credential: id === undefined ? undefined : `scim:${id.toLowerCase()}` };
};

const int = (v: string | undefined) => (v === undefined ? undefined : Number.parseInt(v, 10));

export function scimRoutes(r: Registrar, s: { scim: ScimService }): void {
  const handleScimRequest = async (ctx: Context) => {
    const r = await s.scim.handle({
      method: ctx.method,
      directoryId: ctx.params.directoryId ?? '',
      resourceType: ctx.params.resourceType ?? '',
      resourceId: ctx.params.resourceId,
      apiSecret: authToken(ctx) || null,
      body: ctx.request.body,
      query: {
        count: int(param(ctx, 'count')),
        startIndex: int(param(ctx, 'startIndex')),
        filter: param(ctx, 'filter'),
      },
    });
    ctx.status = r.status;
    // RFC 7644 §3.1: application/scim+json, unless the client asks for application/json only
    // (Jackson always answered application/json; clients that ask for it get it).
    ctx.type = ctx.accepts('application/scim+json', 'application/json') || 'application/scim+json';
    ctx.body = r.data ?? {};
  };
  r.all(`${SCIM_PREFIX}/:directoryId/:resourceType`, handleScimRequest);
  r.all(`${SCIM_PREFIX}/:directoryId/:resourceType/:resourceId`, handleScimRequest);
}
