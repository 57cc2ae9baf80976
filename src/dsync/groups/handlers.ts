/** `/api/v1/dsync/groups` (Jackson pages/api/v1/dsync/groups/{index,[groupId]/index,[groupId]/members}.ts). */

import type { Context } from 'koa';
import type { Registrar } from '../../core/http/routes.ts';
import { allow, pageParams, scopeParams } from '../v1-handlers.ts';
import type { GroupsService } from './service.ts';

export function groupRoutes(r: Registrar, s: { groups: GroupsService }): void {
  /** GET /api/v1/dsync/groups?tenant&product|directoryId: a page of groups; the whole envelope. */
  r.get('/groups', async (ctx: Context) => {
    ctx.body = { data: await s.groups.list(scopeParams(ctx), pageParams(ctx)), error: null };
  });
  allow(r, '/groups', ['GET']);

  /** GET /api/v1/dsync/groups/{groupId}: the group with its members. */
  r.get('/groups/:groupId', async (ctx: Context) => {
    ctx.body = { data: await s.groups.get(scopeParams(ctx), ctx.params.groupId) };
  });
  allow(r, '/groups/:groupId', ['GET']);

  /** GET /api/v1/dsync/groups/{groupId}/members: a page of `[{user_id}]`. */
  r.get('/groups/:groupId/members', async (ctx: Context) => {
    ctx.body = {
      data: await s.groups.getMembers(scopeParams(ctx), { ...pageParams(ctx), groupId: ctx.params.groupId }),
    };
  });
  allow(r, '/groups/:groupId/members', ['GET']);
}
