/** What the logout steps share: their dependencies, their outcome type and the session lookup. */
import type { Kysely } from 'kysely';
import type { Audit } from '../../core/audit/events.ts';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { OAuth2Config } from '../deps.ts';
import type { CookieJar, FlowCookies } from '../flows/cookies.ts';
import type { ClientPort, KeyPort } from '../ports.ts';
import { findRememberedLoginSession, type LoginSession } from '../store/sessions.ts';
import type { Database } from '../tables.ts';
import type { LogoutCodec } from './challenge.ts';
import type { LogoutChannels } from './channels.ts';

export interface LogoutDeps {
  config: OAuth2Config;
  clock: Clock;
  db: Kysely<Database>;
  codec: LogoutCodec;
  cookies: FlowCookies;
  clients: ClientPort;
  keys: KeyPort;
  channels: LogoutChannels;
  log: Logger;
  /** Records audit events (rows with `audit.enabled`). */
  audit: Audit;
}

/** What the public logout endpoint answers: a redirect, or the front-channel page (200 HTML). */
export type LogoutOutcome =
  | { kind: 'redirect'; location: string; aborted?: { error: string; status: number } }
  | { kind: 'page'; redirectTo: string; frontchannelUrls: string[] };

export const redirect = (location: string): LogoutOutcome => ({ kind: 'redirect', location });

/** The remembered, unexpired login session named by `sid`, or by the browser's session cookie. */
export async function cookieSession(
  d: LogoutDeps,
  jar: CookieJar | undefined,
  sid?: string,
): Promise<LoginSession | undefined> {
  const id = sid ?? (jar ? await d.cookies.openSession(jar.get(d.cookies.sessionName)) : undefined);
  if (!id) return undefined;
  return findRememberedLoginSession(d.db, id, d.clock.now());
}
