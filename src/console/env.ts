/**
 * What every page of the console gets (`ConsoleEnv`): the container, the operator's session, the
 * page renderer and the request's form fields. The console's own client id, the path as the browser
 * sees it, and the result messages of its actions are here too.
 */
import type { Context } from 'koa';
import type { Container } from '../container.ts';
import { AppError } from '../core/errors.ts';
import type { Registrar } from '../core/http/routes.ts';
import type { ConsoleSession } from './session.ts';

export const CONSOLE_CLIENT_ID = 'gatehouse-console';

/** The path as the browser sees it (`/console/…`). */
export const publicPath = (ctx: Context) => ctx.path.replace(/^\/admin(?=\/console(\/|$))/, '');

/** What page handlers get: the container, the operator's session and the renderers. */
export interface ConsoleEnv {
  c: Container;
  /** Renders a page of the signed-in operator (status 200 unless given). */
  page(ctx: Context, title: string, body: string, o?: { status?: number; notice?: string | undefined }): void;
  /** The signed-in operator's session (set by the guard). */
  session(ctx: Context): ConsoleSession;
  /** A form field of a POST body (first value). */
  field(ctx: Context, name: string): string;
  /** Every value of a repeated form field. */
  fields(ctx: Context, name: string): string[];
  /** The signed-in operator's CSRF token (every form carries it). */
  csrf(ctx: Context): string;
  /** A path parameter of the route (`:id`). */
  param(ctx: Context, name: string): string;
}

/** A page of the console (src/console/pages/): registers its routes on the operator's group. */
export type ConsolePage = (env: ConsoleEnv, r: Registrar) => void;

/** A form the operator must correct: shown as the console's error page, 400. */
export const badRequest = (description: string) => new AppError({ status: 400, code: 'Bad Request', description });

/** Result messages shown after a redirect (`?done=`): a fixed list, so a link cannot put words on a page. */
export const NOTICES: Record<string, string> = {
  'client-deleted': 'The client was deleted.',
  'client-updated': 'The client was saved.',
  'key-added': 'The key was added to the set.',
  'key-rotated': 'A new key was generated; it signs from now on.',
  'key-deleted': 'The key was deleted.',
  'sessions-revoked': 'The sessions were revoked.',
  'trust-deleted': 'The trust relationship was deleted.',
  'trust-added': 'The trust relationship was added.',
  'jobs-retried': 'The job was re-enqueued.',
  'webhook-retried': 'The delivery was re-enqueued.',
  'link-created': 'A setup link was created.',
  'directory-deleted': 'The directory was deleted, with its users, groups, events and delivery log.',
  'logs-cleared': 'The delivery log was cleared.',
};
