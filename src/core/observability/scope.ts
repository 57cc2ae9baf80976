/**
 * The scope of the current unit of work (an HTTP request or a job run), kept in AsyncLocalStorage
 * so that deep call sites (audit events) know the request id and the caller without threading them
 * through every signature.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface Actor {
  /** `admin` (admin API caller), `api_key` (directory-sync API), `directory` (a SCIM client),
   * `setup_link` (a tenant administrator holding a setup link), `subject` (an end user),
   * `client` (an OAuth2 client), `operator` (a signed-in operator of the console), `system` (a job),
   * `anonymous`. */
  kind: 'admin' | 'api_key' | 'directory' | 'setup_link' | 'subject' | 'client' | 'operator' | 'system' | 'anonymous';
  id?: string;
}

export interface WorkScope {
  requestId: string;
  /** `public`, `admin` or `worker`. */
  listener: string;
  /** Who is acting, when a route knows it better than the listener does (SCIM: the directory). */
  actor?: Actor;
  /**
   * Who authenticated the request, when a guard did (the admin API's key or client): an event that
   * names another actor (a login accepted for its subject) also names the caller.
   */
  caller?: Actor;
}

const storage = new AsyncLocalStorage<WorkScope>();

export const currentScope = (): WorkScope | undefined => storage.getStore();

export function runInScope<T>(scope: WorkScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** Sets who is acting for the rest of the current request (e.g. the directory a SCIM token belongs to). */
export function setActor(actor: Actor): void {
  const s = storage.getStore();
  if (s) s.actor = actor;
}

/** Sets the authenticated caller of the current request, who is also its actor from now on. */
export function setCaller(caller: Actor): void {
  const s = storage.getStore();
  if (s) s.actor = s.caller = caller;
}

/** The actor of the current scope: an explicit one, else by listener. */
export function scopeActor(): Actor {
  const s = storage.getStore();
  if (s?.actor) return s.actor;
  if (s?.listener === 'admin') return { kind: 'admin' };
  if (s?.listener === 'worker') return { kind: 'system' };
  return { kind: 'anonymous' };
}
