/**
 * Shared pieces of the fuzz suites (fast-check against the real HTTP API): a fixed seed and bounded
 * runs by default (`FUZZ_RUNS=<n>` for a longer run, `FUZZ_SEED=<n>` to pick another seed), junk
 * value generators, a fingerprint of everything stored, and the checks every error answer must pass.
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import { beforeEach, expect, vi } from 'vitest';
import type { TestServer } from './apps.ts';
import type { JsonBody } from './json.ts';

const runs = Number(process.env.FUZZ_RUNS ?? 0);
// A long run (FUZZ_RUNS) is bounded by its count only: lift the per-test timeout of the files that fuzz.
if (runs > 0) vi.setConfig({ testTimeout: 60 * 60_000 });
/** Bounded by default (the suites run in `npm test`); `FUZZ_RUNS` raises the count and lifts the time bound. */
export function fuzzParams(defaultRuns: number, timeLimitMs = 8_000): fc.Parameters<unknown> {
  return {
    seed: Number(process.env.FUZZ_SEED ?? 20261124),
    numRuns: runs > 0 ? runs : defaultRuns,
    ...(runs > 0 ? {} : { interruptAfterTimeLimit: timeLimitMs, markInterruptAsFailure: false }),
    endOnFailure: true,
  };
}

/** Text an attacker sends: control and NUL characters, unicode, separators, long runs, encodings. */
export const junk = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '%00',
    '%',
    '%zz',
    '../../etc/passwd',
    '<script>alert(1)</script>',
    "' OR 1=1 --",
    '{"a":1}',
    '[]',
    'null',
    '-1',
    '0',
    '1e309',
    '9999999999999999999999',
    'NaN',
    'true',
    'a'.repeat(3000),
    '\uD800',
    'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
    'eyJhbGciOiJSUzI1NiJ9.e30.c2ln',
    'ory_at_x.y',
    'ory_rt_x.y',
    'ory_ac_x.y',
  ),
);

/** Any JSON value (including wrong types for a field). */
export const anyJson = fc.oneof(
  junk,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(junk, { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 6 }), junk, { maxKeys: 3 }),
);

/** A body that is not what the route expects: broken JSON, the wrong content type, scalars, nesting. */
export const brokenBody = fc.oneof(
  fc.constantFrom('{', '{"a":', '[1,', '"str"', '1', 'null', '\u0000', '{"__proto__":{"x":1}}', '{"constructor":1}'),
  fc.string({ maxLength: 60 }),
  fc.constant(`${'['.repeat(2000)}${']'.repeat(2000)}`),
);

/** A broken body that is not a JSON object (an object with unknown members is a valid body for many routes). */
export const brokenNonObject = brokenBody.filter((b) => {
  try {
    const v = JSON.parse(b) as unknown;
    return typeof v !== 'object' || v === null;
  } catch {
    return true;
  }
});

/**
 * One string that changes when any row of any gatehouse table changes (graphile-worker's own schema
 * and the migration bookkeeping are left out; so are `excluded` tables: by default the failed
 * authentication counters, which failing requests are meant to update).
 */
export async function storedFingerprint(s: TestServer, excluded: string[] = ['auth_failures']): Promise<string> {
  const tables = (
    await sql<{ t: string }>`SELECT table_name AS t FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`.execute(s.container.db)
  ).rows
    .map((r) => r.t)
    .filter((t) => t !== 'gatehouse_schema_migrations' && !excluded.includes(t));
  const parts = tables.map(
    (t) =>
      `(SELECT '${t}:' || count(*) || ':' || coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '') FROM "${t}" x)`,
  );
  const r = await sql<{ f: string }>`SELECT ${sql.raw(parts.join(" || ' ' || "))} AS f`.execute(s.container.db);
  return r.rows[0]?.f ?? '';
}

/** A value that never equals a real identifier or secret (and so can never succeed). */
export const wrong = junk.map((v) => `zz${v}`);

/**
 * Registers, for the calling test file, a snapshot of the stored state at the start of each test
 * (a failure in one test does not cascade into the next). `unchanged(what)` fails when a request
 * changed it; `rebase()` takes the current state as the reference after a request allowed to change it.
 */
export function watchStoredState(server: () => TestServer) {
  let before = '';
  beforeEach(async () => {
    before = await storedFingerprint(server());
  });
  return {
    unchanged: async (what: string) => {
      expect(await storedFingerprint(server()), `stored state changed after ${what}`).toBe(before);
    },
    rebase: async () => {
      before = await storedFingerprint(server());
    },
  };
}

export type Family = 'hydra' | 'scim' | 'dsync';

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

export async function send(url: string, init: RequestInit = {}): Promise<Answer> {
  const r = await fetch(url, { redirect: 'manual', ...init });
  return { status: r.status, headers: r.headers, text: await r.text() };
}

/** Never a stack trace, a file path or a driver's error text. */
export function expectNoLeak(a: Answer, label: string) {
  expect(a.text, label).not.toMatch(/\n\s+at \S|node_modules|\.ts:\d+|\/src\/|SyntaxError|TypeError|ReferenceError/);
  expect(a.text, label).not.toMatch(/relation "|violates|syntax error at|invalid input syntax|ECONN/);
}

/** A 4xx with the family's error body. */
export function expectErrorBody(a: Answer, family: Family, label: string) {
  expect(a.status, `${label} → ${a.status} ${a.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  expect(a.status, `${label} → ${a.status} ${a.text.slice(0, 300)}`).toBeLessThan(500);
  expectNoLeak(a, label);
  const body: JsonBody = JSON.parse(a.text);
  if (family === 'scim') {
    expect(a.headers.get('content-type'), label).toMatch(/^application\/scim\+json/);
    expect(body.schemas, label).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
    expect(body.status, label).toBe(String(a.status));
    expect(typeof body.detail, label).toBe('string');
  } else if (family === 'dsync') {
    expect(a.headers.get('content-type'), label).toMatch(/^application\/json/);
    expect(typeof body.error?.message, `${label} → ${a.text}`).toBe('string');
  } else {
    expect(a.headers.get('content-type'), label).toMatch(/^application\/json/);
    expect(typeof body.error, `${label} → ${a.text}`).toBe('string');
    expect(body.error.length, label).toBeGreaterThan(0);
    expect(typeof body.error_description, `${label} → ${a.text}`).toBe('string');
  }
}

export const label = (what: unknown) => JSON.stringify(what).slice(0, 400);

/** Percent-encodes a path segment; a lone surrogate becomes the invalid UTF-8 `%ED%A0%80` (as an attacker may send). */
export function seg(v: string): string {
  return Array.from(v)
    .map((ch) => {
      try {
        return encodeURIComponent(ch);
      } catch {
        return '%ED%A0%80';
      }
    })
    .join('');
}
