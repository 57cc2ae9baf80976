/** `/api/v1/dsync/users` (Jackson pages/api/v1/dsync/users/{index,[userId]}.ts). */

import type { Context } from 'koa';
import type { Registrar } from '../../core/http/routes.ts';
import { ENTERPRISE_FIELDS } from '../enterprise.ts';
import { allow, pageParams, param, scopeParams } from '../v1-handlers.ts';
import type { UsersService } from './service.ts';

export function userRoutes(r: Registrar, s: { users: UsersService }): void {
  /**
   * GET /api/v1/dsync/users?tenant&product|directoryId: a page of users; the whole envelope. The
   * enterprise extension's fields narrow it: `department`, `organization`, `division`,
   * `cost_center`, `employee_number`, `manager_id` (gatehouse's; Jackson had none).
   */
  r.get('/users', async (ctx: Context) => {
    const where = Object.fromEntries(ENTERPRISE_FIELDS.map((f) => [f.record, param(ctx, f.record)]));
    ctx.body = { data: await s.users.list(scopeParams(ctx), pageParams(ctx), where), error: null };
  });
  allow(r, '/users', ['GET']);

  /** GET /api/v1/dsync/users/{userId} */
  r.get('/users/:userId', async (ctx: Context) => {
    ctx.body = { data: await s.users.get(scopeParams(ctx), ctx.params.userId) };
  });
  allow(r, '/users/:userId', ['GET']);
}
