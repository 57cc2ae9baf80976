/**
 * Replays an identity provider's SCIM request sequence (test/fixtures/dsync/*) against a
 * directory, either over HTTP (the public SCIM routes) or through the library's
 * `requests.handle`, and checks each step's status, body and events.
 */
import { expect } from 'vitest';
import type { DirectorySyncController } from '../../src/dsync/controller.ts';
import type { DirectoryRecord, DirectorySyncEvent } from '../../src/dsync/types.ts';
import type { TestServer } from './apps.ts';
import { scimClient, withStoredEvents } from './dsync.ts';
import type { JsonBody } from './json.ts';

export interface Step {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** `/Users`, `/Groups/{eng}?…`: `{name}` is replaced by a captured id */
  path: string;
  body?: unknown;
  status: number;
  /** remember `body.id` under this name */
  capture?: string;
  /** the body must match (toMatchObject, after substitution) */
  match?: unknown;
  /** the event types this step produces, in order */
  events?: string[];
  check?: (body: JsonBody, ids: Record<string, string>, events: DirectorySyncEvent[]) => void;
}

export interface Scenario {
  provider: DirectoryRecord['type'];
  /** what the provider's documentation this follows */
  source: string;
  steps: Step[];
}

export type Transport = (
  method: string,
  path: string,
  body: unknown,
) => Promise<{ status: number; body: JsonBody; events: DirectorySyncEvent[] }>;

export function substitute<T>(v: T, ids: Record<string, string>): T {
  if (typeof v === 'string') return v.replace(/\{(\w+)\}/g, (m, k) => ids[k] ?? m) as T;
  if (Array.isArray(v)) return v.map((x) => substitute(x, ids)) as T;
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x, ids)])) as T;
  return v;
}

export function httpTransport(s: TestServer, dir: DirectoryRecord): Transport {
  const c = scimClient(s, dir);
  return async (method, path, body) => {
    const { value: r, events } = await withStoredEvents(s, dir.id, () => c(method, path, body));
    return { status: r.status, body: r.body, events };
  };
}

export function handleTransport(ctl: DirectorySyncController, dir: DirectoryRecord): Transport {
  return async (method, path, body) => {
    const url = new URL(`http://x${path}`);
    const [, resourceType, resourceId] = url.pathname.split('/');
    const q = url.searchParams;
    const int = (k: string) => (q.has(k) ? Number.parseInt(q.get(k) as string, 10) : undefined);
    const events: DirectorySyncEvent[] = [];
    const r = await ctl.requests.handle(
      {
        method,
        body: body === undefined ? undefined : structuredClone(body),
        directoryId: dir.id,
        resourceType: resourceType ?? '',
        resourceId,
        apiSecret: dir.scim.secret,
        query: { count: int('count'), startIndex: int('startIndex'), filter: q.get('filter') ?? undefined },
      },
      async (e) => {
        events.push(e);
      },
    );
    return { status: r.status, body: r.data, events };
  };
}

/** Runs the steps in order; returns the captured ids and every event produced. */
export async function replay(scenario: Scenario, send: Transport) {
  const ids: Record<string, string> = {};
  const all: DirectorySyncEvent[] = [];
  for (const step of scenario.steps) {
    const r = await send(step.method, substitute(step.path, ids), substitute(step.body, ids));
    const where = `${scenario.provider}: ${step.name}`;
    expect(r.status, `${where} → ${JSON.stringify(r.body)}`).toBe(step.status);
    if (step.capture) ids[step.capture] = r.body.id;
    if (step.match !== undefined) expect(r.body, where).toMatchObject(substitute(step.match, ids) as object);
    if (step.events)
      expect(
        r.events.map((e) => e.event),
        where,
      ).toEqual(step.events);
    step.check?.(r.body, ids, r.events);
    all.push(...r.events);
  }
  return { ids, events: all };
}
