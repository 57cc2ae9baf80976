import { describe, expect, it } from 'vitest';
import { tabwrite } from '../../../src/cli/printing.ts';
import { formatDuration, parseGoDuration } from '../../../src/core/config/duration.ts';
import { keyRing } from '../../../src/core/crypto/keys.ts';
import { encodePageToken, linkHeader, parsePageQuery } from '../../../src/core/pagination.ts';
import type { ClientDraft } from '../../../src/oauth2/clients/model.ts';
import { applyClientPatch } from '../../../src/oauth2/clients/patch.ts';
import { clientBody, decodeBody, toDraft } from '../../../src/oauth2/clients/schemas.ts';
import { parseRequestUri, parseUrl } from '../../../src/oauth2/clients/uri.ts';
import { supportedSubjectTypes, validateClient } from '../../../src/oauth2/clients/validate.ts';

const env = {
  defaultScope: ['offline_access', 'offline', 'openid'],
  subjectTypes: ['public'],
  accessTokenStrategy: 'opaque' as const,
  dev: false,
};
const draft = (body: Record<string, unknown> = {}): ClientDraft => toDraft(decodeBody(clientBody, body));

describe('Go-compatible URL parsing', () => {
  it('parses like url.ParseRequestURI', () => {
    expect(parseRequestUri('https://a.example.com:8443/cb?x=1')).toMatchObject({
      scheme: 'https',
      hostname: 'a.example.com',
      port: '8443',
      path: '/cb',
      query: 'x=1',
    });
    expect(parseRequestUri('/relative/path')).toMatchObject({ scheme: '', path: '/relative/path' });
    expect(parseRequestUri('javascript:alert(1)')).toMatchObject({ scheme: 'javascript', opaque: 'alert(1)' });
    expect(parseRequestUri('HTTP://[::1]:80/x')).toMatchObject({ scheme: 'http', hostname: '::1', port: '80' });
    for (const bad of ['not-a-URL', '', ':nope', 'http://a b.com/', 'http://a.com:port/', 'http://a\u0001.com', 'cb']) {
      expect(parseRequestUri(bad), bad).toBeUndefined();
    }
  });

  it('parses like url.Parse (fragments split, relative references allowed)', () => {
    expect(parseUrl('https://u:p@a.example.com/x#frag')).toMatchObject({
      userinfo: 'u:p',
      fragment: 'frag',
      path: '/x',
    });
    expect(parseUrl('relative')).toMatchObject({ scheme: '', path: 'relative' });
  });
});

describe('Hydra client rules', () => {
  it('fills Hydra’s defaults', () => {
    const d = validateClient(draft(), env);
    expect(d).toMatchObject({
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'offline_access offline openid',
      subject_type: 'public',
      userinfo_signed_response_alg: 'none',
    });
  });

  it('turns pairwise off under the JWT access token strategy', () => {
    const both = { ...env, subjectTypes: ['public', 'pairwise'] };
    expect(supportedSubjectTypes(both, '')).toEqual(['public', 'pairwise']);
    expect(supportedSubjectTypes(both, 'jwt')).toEqual(['public']);
    expect(supportedSubjectTypes({ ...both, subjectTypes: ['pairwise'] }, '')).toEqual(['pairwise']);
    expect(validateClient(draft(), { ...both, subjectTypes: ['pairwise'] }).subject_type).toBe('pairwise');
    expect(() => validateClient(draft({ subject_type: 'pairwise', access_token_strategy: 'jwt' }), both)).toThrow(
      expect.objectContaining({ hint: 'Subject type pairwise is not supported by server, only [public] are allowed.' }),
    );
  });

  it('does not modify the draft it is given', () => {
    const d = draft({ allowed_cors_origins: ['https://a.example.com/'] });
    validateClient(d, env);
    expect(d.allowed_cors_origins).toEqual(['https://a.example.com/']);
    expect(d.scope).toBe('');
  });
});

describe('JSON Patch with Hydra’s restrictions', () => {
  const doc = { client_name: 'a', redirect_uris: ['x'], metadata: {} };

  it('turns replace of a missing member into add, but not for array elements', () => {
    expect(applyClientPatch(doc, [{ op: 'replace', path: '/owner', value: 'o' }])).toMatchObject({ owner: 'o' });
    expect(() => applyClientPatch(doc, [{ op: 'replace', path: '/redirect_uris/3', value: 'y' }])).toThrow();
    expect(applyClientPatch(doc, [{ op: 'replace', path: '/redirect_uris/0', value: 'y' }]).redirect_uris).toEqual([
      'y',
    ]);
  });

  it('creates missing parents on add and never touches the input', () => {
    const out = applyClientPatch(doc, [{ op: 'add', path: '/metadata/a~1b/c', value: 1 }]);
    expect(out.metadata).toEqual({ 'a/b': { c: 1 } });
    expect(doc.metadata).toEqual({});
  });

  it('refuses move, copy, test and the id, as 400 errors', () => {
    for (const op of ['move', 'copy', 'test']) {
      expect(() => applyClientPatch(doc, [{ op, path: '/a', from: '/b', value: 1 }])).toThrow(/unsupported operation/);
    }
    for (const path of ['/client_id', '/ID']) {
      try {
        applyClientPatch(doc, [{ op: 'add', path, value: 'x' }]);
        expect.unreachable();
      } catch (e) {
        expect((e as { status: number }).status).toBe(400);
      }
    }
  });
});

describe('keyset page tokens and Link headers', () => {
  const ring = keyRing(['pagination-secret-0123456789'], 'pagination');

  it('round-trips a cursor, expires after an hour, and refuses another list’s token', async () => {
    const t0 = new Date('2026-01-01T00:00:00Z');
    const t = await encodePageToken(ring, 'clients', { id: 'abc' }, t0);
    expect(await parsePageQuery({ page_token: t }, ring, 'clients', t0)).toEqual({ size: 100, after: { id: 'abc' } });
    const later = new Date(t0.getTime() + 3600_000 + 1000);
    await expect(parsePageQuery({ page_token: t }, ring, 'clients', later)).rejects.toMatchObject({
      description: 'Unable to parse pagination parameters: page token expired, do not persist page tokens',
    });
    await expect(parsePageQuery({ page_token: t }, ring, 'sessions', t0)).rejects.toMatchObject({
      description: 'Unable to parse pagination parameters: invalid pagination token',
    });
    const rotated = keyRing(['new-pagination-secret-0123', 'pagination-secret-0123456789'], 'pagination');
    expect((await parsePageQuery({ page_token: t }, rotated, 'clients', t0)).after).toEqual({ id: 'abc' });
  });

  it('defaults and clamps page_size', async () => {
    const now = new Date();
    expect((await parsePageQuery({}, ring, 'k', now)).size).toBe(100);
    expect((await parsePageQuery({ page_size: '0' }, ring, 'k', now)).size).toBe(100);
    expect((await parsePageQuery({ page_size: '-3' }, ring, 'k', now)).size).toBe(100);
    expect((await parsePageQuery({ page_size: '501' }, ring, 'k', now)).size).toBe(500);
    expect((await parsePageQuery({ page_size: '7' }, ring, 'k', now)).size).toBe(7);
  });

  it('builds relative links with sorted, Go-escaped queries', () => {
    const h = linkHeader({
      path: '/admin/clients',
      query: { owner: 'a b*', page_size: '3', page_token: 'old' },
      size: 3,
      first: 'F.1',
      next: 'N.2',
    });
    expect(h).toBe(
      '</admin/clients?owner=a+b%2A&page_size=3&page_token=F.1>; rel="first",</admin/clients?owner=a+b%2A&page_size=3&page_token=N.2>; rel="next"',
    );
    expect(linkHeader({ path: '/x', query: {}, size: 1, first: 'F', next: undefined })).toBe(
      '</x?page_size=1&page_token=F>; rel="first"',
    );
  });
});

describe('Go durations', () => {
  it('parses what time.ParseDuration accepts and formats like Duration.String', () => {
    expect(parseGoDuration('1h30m')).toBe(5_400_000);
    expect(parseGoDuration('1.5s')).toBe(1500);
    expect(parseGoDuration('-2m')).toBe(-120_000);
    expect(parseGoDuration('0')).toBe(0);
    expect(parseGoDuration('100us')).toBe(0);
    for (const bad of ['', '1d', '1 h', 'h', '1', '--1s']) expect(parseGoDuration(bad), bad).toBeUndefined();
    expect(formatDuration(31 * 3_600_000)).toBe('31h0m0s');
    expect(formatDuration(1_800_000)).toBe('30m0s');
    expect(formatDuration(500)).toBe('500ms');
    expect(formatDuration(1500)).toBe('1.5s');
  });
});

describe('tabwriter output', () => {
  it('aligns each column to tab stops within runs of lines that have it (Go text/tabwriter)', () => {
    expect(
      tabwrite([
        ['ID', 'x'],
        ['LONGER HEADER', 'y'],
      ]),
    ).toBe('ID\t\tx\t\nLONGER HEADER\ty\t\n');
    // An empty row keeps column 0 aligned but starts a new run for column 1.
    expect(tabwrite([['A', 'very-long-value-here'], [''], ['B', 'v']])).toBe('A\tvery-long-value-here\t\n\t\nB\tv\t\n');
  });
});
