/**
 * CORS origin patterns (src/core/http/cors.ts): Hydra's glob semantics, matched label by label
 * without regular expressions, with bounded work for any `Origin`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileOrigin,
  isUnsafeWildcard,
  MAX_ORIGIN_LABELS,
  MAX_ORIGIN_LENGTH,
  originMatcher,
  originPatternProblem,
} from '../../../src/core/http/cors.ts';
import { fuzzParams } from '../../helpers/fuzz.ts';

const CATASTROPHIC = 'https://**.**.**.**:1';
/** Lets the test's timeout fire between batches, should matching ever block. */
const breathe = () => new Promise<void>((r) => setImmediate(r));

describe('origin patterns', () => {
  it('match host label by label: * one label, ** one or more, ? one character, {a,b} alternatives', () => {
    const yes: Array<[string, string]> = [
      ['https://*.example.com', 'https://app.example.com'],
      ['https://**.example.com', 'https://a.b.example.com'],
      ['https://**.example.com', 'https://a.example.com'],
      ['https://a.**.z', 'https://a.b.c.z'],
      ['https://{app,admin}.example.com', 'https://admin.example.com'],
      ['https://{a.example.com,b.example.org}', 'https://b.example.org'],
      ['{http,https}://x.example', 'http://x.example'],
      ['https://a?.example.com', 'https://ab.example.com'],
      ['http://localhost:*', 'http://localhost:3000'],
      ['http://localhost:{3000,8080}', 'http://localhost:8080'],
      ['https://*', 'https://a.b.c:8443'],
      ['https://**', 'https://a.b.c:8443'],
      ['http://[::1]:8080', 'http://[::1]:8080'],
      ['null', 'null'],
      [CATASTROPHIC, 'https://a.b.c.d:1'],
      [CATASTROPHIC, 'https://a.b.c.d.e.f:1'],
      ['HTTPS://App.Example.com', 'https://app.example.COM'],
    ];
    const no: Array<[string, string]> = [
      ['https://*.example.com', 'https://a.b.example.com'],
      ['https://*.example.com', 'https://example.com'],
      ['https://*.example.com', 'https://.example.com'],
      ['https://*.example.com', 'https://evilexample.com'],
      ['https://*.example.com', 'http://app.example.com'],
      ['https://*.example.com', 'https://app.example.com:8443'],
      ['https://**.example.com', 'https://example.com'],
      ['https://example.**', 'https://example.com:8443'],
      ['https://a?.example.com', 'https://abc.example.com'],
      ['http://localhost:*', 'http://localhost'],
      ['https://x.example', 'https://x.example/'],
      ['https://x.example', 'https://user@x.example'],
      ['https://*', 'http://a.b'],
      [CATASTROPHIC, 'https://a.b.c:1'],
      [CATASTROPHIC, 'https://a.b.c.d:2'],
      [CATASTROPHIC, 'https://a.b.c.d'],
      [CATASTROPHIC, 'https://a.b.c..d:1'],
    ];
    for (const [p, o] of yes) expect(compileOrigin(p)?.(o), `${p} ~ ${o}`).toBe(true);
    for (const [p, o] of no) expect(compileOrigin(p)?.(o), `${p} !~ ${o}`).toBe(false);
  });

  it('ignores a * that is not a whole host label, and malformed patterns, saying why', () => {
    for (const p of ['https://*foo.com', 'https://a*.b.com', 'https://**x.com', 'https://{*x,y}.com']) {
      expect(isUnsafeWildcard(p), p).toBe(true);
      expect(compileOrigin(p), p).toBeUndefined();
      expect(originPatternProblem(p), p).toContain('not a whole host label');
    }
    for (const p of ['https://{a,b', 'https://a,b}', 'https://', `https://${'{a,b}.'.repeat(7)}com`]) {
      expect(compileOrigin(p), p).toBeUndefined();
      expect(originPatternProblem(p), p).toContain('scheme://host[:port]');
    }
    for (const p of ['*', 'https://*', 'https://*.example.com', CATASTROPHIC, 'http://localhost:*']) {
      expect(originPatternProblem(p), p).toBeUndefined();
    }
    expect(originMatcher(['https://*foo.com', 'https://ok.example'])('https://ok.example')).toBe(true);
    expect(originMatcher(['https://*foo.com'])('https://evilfoo.com')).toBe(false);
    expect(originMatcher([])('https://a.example')).toBe(false);
  });

  it('refuses an Origin over 1,024 bytes or with more than 127 labels before matching', () => {
    const labels = (n: number) => Array.from({ length: n }, () => 'a').join('.');
    expect(compileOrigin(CATASTROPHIC)?.(`https://${labels(MAX_ORIGIN_LABELS)}:1`)).toBe(true);
    expect(compileOrigin(CATASTROPHIC)?.(`https://${labels(MAX_ORIGIN_LABELS + 1)}:1`)).toBe(false);
    const long = `https://${'a'.repeat(MAX_ORIGIN_LENGTH - 'https://.b.c.d:1'.length)}.b.c.d:1`;
    expect(long.length).toBe(MAX_ORIGIN_LENGTH);
    expect(compileOrigin(CATASTROPHIC)?.(long)).toBe(true);
    expect(compileOrigin(CATASTROPHIC)?.(`${long.slice(0, 8)}a${long.slice(8)}`)).toBe(false);
    expect(compileOrigin('https://*')?.(`https://${'a.'.repeat(5000)}b`)).toBe(false);
    expect(compileOrigin('https://*')?.(`https://${'a.'.repeat(100)}b`)).toBe(true);
  });

  it('matches 10,000 adversarial 1,000-byte origins against the former catastrophic pattern (bounded by count)', async () => {
    const match = compileOrigin(CATASTROPHIC) as (o: string) => boolean;
    const host = (label: string) => {
      let h = label;
      while (h.length + label.length + 1 < 980) h += `.${label}`;
      return h;
    };
    // Shapes that made the former regular expression backtrack, and ones that make this matcher do
    // its whole table (port right, last label empty).
    const shapes = [
      (i: number) => `https://${host('a')}:2${i}`,
      () => `https://${host('ab')}.:1`,
      (i: number) => `https://${host(`x${i % 10}`)}`,
      (i: number) => `https://${'a'.repeat(990)}${i}:1`,
    ];
    let allowed = 0;
    for (let i = 0; i < 10_000; i++) {
      const origin = (shapes[i % shapes.length] as (i: number) => string)(i);
      expect(origin.length).toBeGreaterThan(980);
      if (match(origin)) allowed++;
      if (i % 10 === 0) await breathe();
    }
    expect(allowed).toBe(0);
  });
});

/** A pattern built from parts, so that the reference can translate the parts and not the string. */
type HostToken = string | { alt: readonly string[] };
interface PatternParts {
  scheme: string;
  host: HostToken[] | 'any';
  port: string | undefined;
}

const render = (p: PatternParts) =>
  `${p.scheme}://${
    p.host === 'any' ? '*' : p.host.map((t) => (typeof t === 'string' ? t : `{${t.alt.join(',')}}`)).join('.')
  }${p.port === undefined || p.host === 'any' ? '' : `:${p.port}`}`;

const escapeRe = (s: string) => s.replace(/[.+^$()|[\]\\/{}]/g, '\\$&');
/** A component glob as a regular expression: `*` any run, `?` one character, `{a,b}`. */
const globRe = (g: string): string =>
  g.replace(/\{([^}]*)\}|\*|\?|[^{*?]+/g, (m, alt?: string) =>
    alt !== undefined
      ? `(?:${alt.split(',').map(globRe).join('|')})`
      : m === '*'
        ? '.*'
        : m === '?'
          ? '.'
          : escapeRe(m),
  );
/** One host label of the pattern: `*` one label, `**` one or more, `?` one character. */
const labelRe = (l: string) =>
  l === '*' ? '[^.]+' : l === '**' ? '[^.]+(?:\\.[^.]+)*' : escapeRe(l).replaceAll('?', '[^.]');
const hostRe = (t: HostToken) =>
  typeof t === 'string' ? labelRe(t) : `(?:${t.alt.map((a) => a.split('.').map(labelRe).join('\\.')).join('|')})`;

/** The rules as plain (backtracking, fine on short input) regular expressions, one per component. */
function reference(p: PatternParts, origin: string): boolean {
  const m = /^([a-z]+):\/\/([^:]+)(?::([0-9]+))?$/.exec(origin);
  if (!m) return false;
  const [, scheme, host, port] = m as unknown as [string, string, string, string | undefined];
  if (!new RegExp(`^${globRe(p.scheme)}$`).test(scheme)) return false;
  if (p.host === 'any') return true;
  // `scheme://**` as written is any host and port too.
  if (p.host.length === 1 && (p.host[0] === '*' || p.host[0] === '**') && p.port === undefined) return true;
  if (p.port === undefined ? port !== undefined : port === undefined || !new RegExp(`^${globRe(p.port)}$`).test(port)) {
    return false;
  }
  return new RegExp(`^${p.host.map(hostRe).join('\\.')}$`).test(host);
}

const LABELS = ['a', 'b', 'ab', 'ba', 'com'];
const patternParts: fc.Arbitrary<PatternParts> = fc.record({
  scheme: fc.constantFrom('http', 'https', '*', 'http?', '{http,https}', 'ht*s'),
  host: fc.oneof(
    { weight: 1, arbitrary: fc.constant('any' as const) },
    {
      weight: 8,
      arbitrary: fc.array(
        fc.oneof(
          fc.constantFrom(...LABELS, '*', '**', '?', 'a?', '??'),
          fc.constantFrom({ alt: ['a', 'b'] }, { alt: ['a.b', 'com'] }, { alt: ['*', 'ab'] }, { alt: ['**.a', 'b'] }),
        ),
        { minLength: 1, maxLength: 4 },
      ),
    },
  ),
  port: fc.constantFrom(undefined, '1', '80', '*', '8?', '{1,81}'),
});
const origins = fc
  .record({
    scheme: fc.constantFrom('http', 'https', 'hxxps'),
    labels: fc.array(fc.constantFrom(...LABELS), { minLength: 1, maxLength: 6 }),
    port: fc.constantFrom(undefined, '1', '2', '80', '81'),
  })
  .map((o) => `${o.scheme}://${o.labels.join('.')}${o.port === undefined ? '' : `:${o.port}`}`);

describe('origin patterns against a reference (fast-check)', () => {
  it('agree with plain regular expressions of the same rules on short patterns and origins', () => {
    const seen = { true: 0, false: 0 };
    fc.assert(
      fc.property(patternParts, fc.array(origins, { minLength: 1, maxLength: 8 }), (parts, os) => {
        const pattern = render(parts);
        const match = compileOrigin(pattern);
        if (!match) return false;
        for (const o of os) {
          const got = match(o);
          seen[`${got}`]++;
          if (got !== reference(parts, o)) return false;
        }
        return true;
      }),
      fuzzParams(2_000),
    );
    // Both answers were exercised, many times.
    expect(seen.true).toBeGreaterThan(200);
    expect(seen.false).toBeGreaterThan(200);
  });

  it('answers long, many-label origins as the rules say, and refuses the over-long ones', async () => {
    const longOrigins = fc.record({
      scheme: fc.constantFrom('https', 'http'),
      labels: fc.array(fc.stringMatching(/^[a-z0-9-]{0,12}$/), { minLength: 1, maxLength: 300 }),
      port: fc.constantFrom(undefined, '1', '2'),
    });
    const catastrophic = compileOrigin(CATASTROPHIC) as (o: string) => boolean;
    const label = compileOrigin('https://*.example.com') as (o: string) => boolean;
    await fc.assert(
      fc.asyncProperty(longOrigins, async (o) => {
        const origin = `${o.scheme}://${o.labels.join('.')}${o.port === undefined ? '' : `:${o.port}`}`;
        const within = origin.length <= MAX_ORIGIN_LENGTH && o.labels.length <= MAX_ORIGIN_LABELS;
        const expected =
          within && o.scheme === 'https' && o.port === '1' && o.labels.length >= 4 && o.labels.every((l) => l !== '');
        expect(catastrophic(origin)).toBe(expected);
        expect(label(origin)).toBe(false);
        expect(label(`https://${o.labels.join('-') || 'x'}.example.com`)).toBe(
          `https://${o.labels.join('-') || 'x'}.example.com`.length <= MAX_ORIGIN_LENGTH,
        );
        await breathe();
      }),
      fuzzParams(300),
    );
  });
});
