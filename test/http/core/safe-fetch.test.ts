/**
 * The SSRF guard. Names resolve through the resolver seam (never real DNS); every connection that
 * is made goes to a loopback server of this file. Hostile targets use that server's port, so a
 * guard that let a loopback spelling through would show up as a connection.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dsyncSafeFetch, oauth2SafeFetch } from '../../../src/container.ts';
import { loadConfig } from '../../../src/core/config/load.ts';
import {
  createSafeFetch,
  type Resolver,
  type SafeFetchError,
  type SafeFetchOptions,
} from '../../../src/core/safe-fetch.ts';
import { LogCapture } from '../../helpers/apps.ts';

interface Seen {
  method: string;
  url: string;
  host: string;
  authorization: string | undefined;
  body: string;
  local: string | undefined;
}

let server: http.Server;
let port = 0;
let connections = 0;
const seen: Seen[] = [];

/** Redirecting paths: status and target (`/to?u=<target>` redirects anywhere). */
function redirectOf(url: URL): [number, string] | undefined {
  const table: Record<string, [number, string]> = {
    '/loop': [302, '/loop'],
    '/r1': [302, '/r2'],
    '/r2': [301, `http://127.0.0.1:${port}/echo`],
    '/see-other': [303, '/echo'],
    '/temporary': [307, '/echo'],
    '/to': [302, url.searchParams.get('u') ?? '/'],
  };
  return table[url.pathname];
}

function route(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const redirect = redirectOf(url);
  if (redirect) {
    res.writeHead(redirect[0], { location: redirect[1] });
    res.end();
    return;
  }
  switch (url.pathname) {
    case '/hang':
      return; // never answers
    case '/slow-body':
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      return;
    case '/big':
      res.writeHead(200, { 'content-length': '5000' });
      res.end('x'.repeat(5000));
      return;
    case '/chunked':
      res.writeHead(200);
      for (let i = 0; i < 50; i++) res.write('y'.repeat(100));
      res.end();
      return;
    case '/not-json':
      res.end('<html>');
      return;
    default:
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ ok: true, path: url.pathname, method: req.method, body }));
  }
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        host: req.headers.host ?? '',
        authorization: req.headers.authorization,
        body,
        local: req.socket.localAddress,
      });
      route(req, res, body);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  seen.length = 0;
  connections = 0;
});

const v4 = (address: string) => ({ address, family: 4 as const });
const v6 = (address: string) => ({ address, family: 6 as const });

/** Names that resolve inward (or publicly) through the seam; anything else is ENOTFOUND. */
const DNS: Record<string, Array<{ address: string; family: 4 | 6 }>> = {
  'internal.example': [v4('10.1.2.3')],
  'metadata.example': [v4('169.254.169.254')],
  'loop.example': [v4('127.0.0.1')],
  'cgnat.example': [v4('100.64.1.1')],
  'v6-loop.example': [v6('::1')],
  'ula.example': [v6('fd00::1')],
  'mapped.example': [v6('::ffff:10.0.0.1')],
  'nat64.example': [v6('64:ff9b::7f00:1')],
  'sixtofour.example': [v6('2002:a9fe:a9fe::1')],
  'mixed.example': [v4('127.0.0.1'), v4('192.168.0.10')],
  '127.0.0.1.nip.io': [v4('127.0.0.1')],
  '10-0-0-1.sslip.io': [v4('10.0.0.1')],
  'multicast.example': [v4('239.1.2.3')],
  'other.test': [v4('127.0.0.1')],
};

function seam(calls: string[]): Resolver {
  return async (host) => {
    calls.push(host);
    const a = DNS[host];
    if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return a;
  };
}

/** No dotted quad, no IPv6 (two colons around hex), and none of the given spellings. */
function expectAddressFree(text: string, spellings: string[] = []): void {
  expect(text).not.toMatch(/\d+\.\d+/);
  expect(text).not.toMatch(/[0-9a-f]*:[0-9a-f]*:[0-9a-f]*/i);
  for (const s of spellings) expect(text.toLowerCase()).not.toContain(s.toLowerCase());
}

async function failure(p: Promise<unknown>): Promise<SafeFetchError> {
  try {
    await p;
  } catch (e) {
    expect((e as Error).name).toBe('SafeFetchError');
    return e as SafeFetchError;
  }
  throw new Error('expected the request to fail');
}

const guarded = (extra: Partial<SafeFetchOptions> = {}, calls: string[] = [], log?: LogCapture) =>
  createSafeFetch({
    disallowPrivate: true,
    resolver: seam(calls),
    connectTimeoutMs: 500,
    timeoutMs: 2000,
    ...(log ? { log: log.logger() } : {}),
    ...extra,
  });

describe('safe-fetch: hostile targets', () => {
  // [url, spellings that must not appear in the message, the host as messages name it]
  const literal = (u: string, ...spell: string[]): [string, string[], string] => [u, spell, 'an IP-literal host'];
  const named = (u: string, name: string, ...spell: string[]): [string, string[], string] => [u, spell, `host ${name}`];
  const TARGETS = (p: number): Array<[string, string[], string]> => [
    literal(`http://127.0.0.1:${p}/`),
    literal(`http://127.1:${p}/`, '127'),
    literal(`http://2130706433:${p}/`, '2130706433'),
    literal(`http://0177.0.0.1:${p}/`, '0177'),
    literal(`http://0x7f.1:${p}/`, '0x7f'),
    literal(`http://0x7f000001:${p}/`, '0x7f000001'),
    literal(`http://0x7f.0x0.0x0.0x1:${p}/`, '0x7f'),
    literal(`http://017700000001:${p}/`, '017700000001'),
    literal(`http://127.0.0.1.:${p}/`),
    literal(`http://[::1]:${p}/`),
    literal(`http://[::ffff:127.0.0.1]:${p}/`, 'ffff'),
    literal(`http://[::ffff:7f00:1]:${p}/`, '7f00'),
    literal(`http://[0:0:0:0:0:ffff:7f00:1]:${p}/`, '7f00'),
    literal(`http://[::127.0.0.1]:${p}/`, '7f00'),
    literal(`http://0.0.0.0:${p}/`),
    literal(`http://0:${p}/`),
    literal(`http://[::]:${p}/`),
    literal('http://10.0.0.1/'),
    literal('http://172.16.5.4/'),
    literal('http://192.168.1.1/'),
    literal('http://100.64.0.1/'),
    literal('http://169.254.169.254/latest/meta-data/', '169'),
    literal('http://0xa9fea9fe/latest/meta-data/', '0xa9fea9fe'),
    literal('http://[fe80::1]/', 'fe80'),
    literal('http://[fd00::1]/', 'fd00'),
    literal('http://[fc00::1]/', 'fc00'),
    literal('http://224.0.0.1/'),
    literal('http://[ff02::1]/', 'ff02'),
    literal('http://255.255.255.255/'),
    literal('http://240.0.0.1/'),
    literal('http://[2002:7f00:1::]/', '2002'),
    literal('http://[64:ff9b::a9fe:a9fe]/', 'a9fe'),
    literal('http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', '80ff'),
    literal('https://[::ffff:a9fe:a9fe]/', 'a9fe'),
    named(`http://localhost:${p}/`, 'localhost'),
    named(`http://LOCALHOST.:${p}/`, 'localhost'),
    named(`http://app.localhost:${p}/`, 'app.localhost'),
    named(`http://loop.example:${p}/`, 'loop.example'),
    named('http://internal.example/', 'internal.example'),
    named('https://metadata.example/latest/meta-data/', 'metadata.example'),
    named('http://cgnat.example/', 'cgnat.example'),
    named(`http://v6-loop.example:${p}/`, 'v6-loop.example'),
    named('http://ula.example/', 'ula.example'),
    named('http://mapped.example/', 'mapped.example'),
    named(`http://nat64.example:${p}/`, 'nat64.example'),
    named('http://sixtofour.example/', 'sixtofour.example'),
    named('http://mixed.example/', 'mixed.example'),
    named('http://multicast.example/', 'multicast.example'),
    named(`http://127.0.0.1.nip.io:${p}/`, '*.nip.io', '127'),
    named('http://10-0-0-1.sslip.io/', '*.sslip.io', '10-0-0-1'),
  ];

  it('refuses at least 25 hostile targets with address-free messages and logs, without connecting', async () => {
    const log = new LogCapture();
    const calls: string[] = [];
    const f = guarded({}, calls, log);
    const targets = TARGETS(port);
    expect(targets.length).toBeGreaterThanOrEqual(25);
    for (const [url, spellings, host] of targets) {
      const e = await failure(f(url));
      expect(e.code, url).toBe('blocked_address');
      expect(e.message, url).toContain(host);
      expect(e.host).toBe(host);
      expectAddressFree(e.message, spellings);
      expectAddressFree(String(e), spellings);
    }
    expect(connections).toBe(0);
    // IP literals and localhost names are never handed to DNS.
    expect(calls.every((h) => /example|nip\.io|sslip\.io/.test(h))).toBe(true);
    expect(calls).not.toContain('localhost');
    const refusals = log.entries().filter((e) => e.code === 'blocked_address');
    expect(refusals).toHaveLength(targets.length);
    expect(refusals.every((e) => e.level === 40)).toBe(true);
    for (const line of log.lines) expectAddressFree(line.replace(/"time":"[^"]+"/, ''), ['2130706433', '0x7f']);
  });

  it('checks every address a name resolves to, not only the first', async () => {
    // the first answer is acceptable here (allowedRanges), the second is not
    const e = await failure(guarded({ allowedRanges: ['127.0.0.1/32'] })(`http://mixed.example:${port}/`));
    expect(e.code).toBe('blocked_address');
    expect(e.message).toMatch(/host mixed\.example refused: its address is not allowed \(private\)/);
    expect(connections).toBe(0);
  });

  it('refuses non-http(s) and malformed URLs without echoing them', async () => {
    const f = guarded();
    for (const u of ['file:///etc/passwd', 'gopher://127.0.0.1:70/', 'http://[::1', 'not a url', 'http://']) {
      const e = await failure(f(u));
      expect(e.code).toBe('invalid_url');
      expectAddressFree(e.message, ['passwd']);
    }
  });
});

describe('safe-fetch: allowed targets', () => {
  it('reaches any target with the guard off, pinned to what the resolver answered', async () => {
    const calls: string[] = [];
    const f = createSafeFetch({ disallowPrivate: false, resolver: seam(calls) });
    const r = await f(`http://127.0.0.1:${port}/hello?q=1`, { headers: { 'X-Test': 'yes' } });
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ ok: true, path: '/hello', method: 'GET' });
    expect(r.headers['content-type']).toBe('application/json');
    const named = await f(`http://other.test:${port}/named`);
    expect(named.status).toBe(200);
    expect(seen.map((s) => s.host)).toEqual([`127.0.0.1:${port}`, `other.test:${port}`]);
    expect(calls).toEqual(['other.test']);
  });

  it('sends bodies and reports the final URL', async () => {
    const f = createSafeFetch({ disallowPrivate: false });
    const r = await f(`http://127.0.0.1:${port}/post`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(r.json()).toMatchObject({ method: 'POST', body: '{"a":1}' });
    expect(r.url).toBe(`http://127.0.0.1:${port}/post`);
    expect(r.text()).toContain('"ok":true');
  });

  it('lets exception URLs through the guard: exact (query ignored) and `*` within one path segment', async () => {
    const f = guarded({
      allowList: [`http://127.0.0.1:${port}/allowed`, `http://127.0.0.1:${port}/glob/*`],
    });
    expect((await f(`http://127.0.0.1:${port}/allowed`)).status).toBe(200);
    expect((await f(`http://127.0.0.1:${port}/allowed?x=1`)).status).toBe(200);
    expect((await f(`http://127.0.0.1:${port}/glob/jwks.json`)).status).toBe(200);
    for (const other of ['/ALLOWED', '/allowed/more', '/glob/a/b', '/other']) {
      expect((await failure(f(`http://127.0.0.1:${port}${other}`))).code).toBe('blocked_address');
    }
    expect(seen.map((s) => s.url)).toEqual(['/allowed', '/allowed?x=1', '/glob/jwks.json']);
  });

  it('builds the OAuth2 and dsync clients from the configuration', async () => {
    const on = loadConfig({
      env: {},
      overrides: {
        'clients.http.disallow_private_ip_ranges': true,
        'clients.http.private_ip_exception_urls': [`http://127.0.0.1:${port}/jwks`],
        'dsync.disallow_private_ip_ranges': true,
      },
    });
    expect((await oauth2SafeFetch(on)(`http://127.0.0.1:${port}/jwks`)).status).toBe(200);
    expect((await failure(oauth2SafeFetch(on)(`http://127.0.0.1:${port}/other`))).code).toBe('blocked_address');
    expect((await failure(dsyncSafeFetch(on)(`http://127.0.0.1:${port}/jwks`))).code).toBe('blocked_address');
    const off = loadConfig({ env: {}, overrides: {} });
    expect((await oauth2SafeFetch(off)(`http://127.0.0.1:${port}/x`)).status).toBe(200);
    expect((await dsyncSafeFetch(off)(`http://127.0.0.1:${port}/x`)).status).toBe(200);
  });
});

describe('safe-fetch: redirects', () => {
  it('follows redirects (each hop checked) and reports them', async () => {
    const r = await createSafeFetch({ disallowPrivate: false })(`http://127.0.0.1:${port}/r1`);
    expect(r.status).toBe(200);
    expect(r.redirects).toBe(2);
    expect(r.url).toBe(`http://127.0.0.1:${port}/echo`);
  });

  it('refuses a redirect from an allowed host to an inward target', async () => {
    const calls: string[] = [];
    const log = new LogCapture();
    const f = guarded({ allowList: [`http://127.0.0.1:${port}/to`] }, calls, log);
    const inward = [
      `http://127.0.0.1:${port}/secret`,
      `http://localhost:${port}/secret`,
      'http://169.254.169.254/latest/meta-data/',
      'http://internal.example/admin',
      `http://[::ffff:7f00:1]:${port}/secret`,
    ];
    for (const target of inward) {
      const e = await failure(f(`http://127.0.0.1:${port}/to?u=${encodeURIComponent(target)}`));
      expect(e.code).toBe('blocked_address');
      expectAddressFree(e.message, ['ffff', '7f00']);
    }
    expect(seen.map((s) => new URL(s.url, 'http://x').pathname)).toEqual(inward.map(() => '/to'));
    for (const line of log.lines) expectAddressFree(line.replace(/"time":"[^"]+"/, ''));
  });

  it('refuses a redirect to a non-http scheme', async () => {
    const f = createSafeFetch({ disallowPrivate: false });
    const e = await failure(f(`http://127.0.0.1:${port}/to?u=${encodeURIComponent('file:///etc/passwd')}`));
    expect(e.code).toBe('invalid_url');
  });

  it('stops after maxRedirects', async () => {
    const e = await failure(
      createSafeFetch({ disallowPrivate: false, maxRedirects: 3 })(`http://127.0.0.1:${port}/loop`),
    );
    expect(e.code).toBe('too_many_redirects');
    expect(seen).toHaveLength(4);
    expectAddressFree(e.message);
  });

  it('turns POST into GET on 303, keeps it on 307, and drops credentials across origins', async () => {
    const f = createSafeFetch({ disallowPrivate: false, resolver: seam([]) });
    const post = { method: 'POST', body: 'payload', headers: { authorization: 'Bearer t0ken' } } as const;
    expect((await f(`http://127.0.0.1:${port}/see-other`, post)).json()).toMatchObject({ method: 'GET', body: '' });
    expect((await f(`http://127.0.0.1:${port}/temporary`, post)).json()).toMatchObject({
      method: 'POST',
      body: 'payload',
    });
    const cross = `http://other.test:${port}/echo`;
    await f(`http://127.0.0.1:${port}/to?u=${encodeURIComponent(cross)}`, {
      headers: { authorization: 'Bearer t0ken' },
    });
    // same-origin hops keep the header; the hop to other.test does not get it
    expect(seen.map((s) => s.authorization)).toEqual([...Array(5).fill('Bearer t0ken'), undefined]);
    expect(seen[5]?.host).toBe(`other.test:${port}`);
  });

  it('returns the redirect itself with redirect: manual', async () => {
    const r = await createSafeFetch({ disallowPrivate: false })(`http://127.0.0.1:${port}/r1`, { redirect: 'manual' });
    expect(r.status).toBe(302);
    expect(r.headers.location).toBe('/r2');
  });
});

describe('safe-fetch: DNS rebinding', () => {
  /** Answers `first` on the first lookup of a name, `later` on every further one. */
  function rebinding(first: string, later: string, calls: string[]): Resolver {
    return async (host) => {
      calls.push(host);
      return [v4(calls.length === 1 ? first : later)];
    };
  }

  it('connects to the address it checked, never to a later DNS answer', async () => {
    const calls: string[] = [];
    // 127.0.0.1 stands in for "a public address" here (allowedRanges); the second answer is metadata.
    const f = createSafeFetch({
      disallowPrivate: true,
      allowedRanges: ['127.0.0.1/32'],
      resolver: rebinding('127.0.0.1', '169.254.169.254', calls),
    });
    const r = await f(`http://rebind.test:${port}/pinned`);
    expect(r.status).toBe(200);
    expect(calls).toEqual(['rebind.test']); // resolved once; the connection used that answer
    expect(seen).toEqual([expect.objectContaining({ host: `rebind.test:${port}`, local: '127.0.0.1' })]);
  });

  it('re-resolves and re-checks the host on every redirect hop', async () => {
    const calls: string[] = [];
    const f = createSafeFetch({
      disallowPrivate: true,
      allowedRanges: ['127.0.0.1/32'],
      resolver: rebinding('127.0.0.1', '169.254.169.254', calls),
    });
    const e = await failure(f(`http://rebind.test:${port}/to?u=${encodeURIComponent(`http://rebind.test:${port}/x`)}`));
    expect(e.code).toBe('blocked_address');
    expect(e.message).toContain('host rebind.test');
    expect(calls).toEqual(['rebind.test', 'rebind.test']);
    expect(seen).toHaveLength(1);
  });

  it('never connects when the first answer is internal', async () => {
    const f = createSafeFetch({ disallowPrivate: true, resolver: rebinding('127.0.0.1', '127.0.0.1', []) });
    expect((await failure(f(`http://rebind.test:${port}/`))).code).toBe('blocked_address');
    expect(connections).toBe(0);
  });
});

describe('safe-fetch: limits', () => {
  it('bounds the total time, also while the body trickles in', async () => {
    const f = createSafeFetch({ disallowPrivate: false, timeoutMs: 300 });
    for (const path of ['/hang', '/slow-body']) {
      const started = Date.now();
      const e = await failure(f(`http://127.0.0.1:${port}${path}`));
      expect(e.code).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(3000);
      expect(e.message).toBe('an IP-literal host did not answer within 300 ms');
    }
  });

  it('bounds the DNS lookup by the same deadline', async () => {
    const f = createSafeFetch({ disallowPrivate: true, timeoutMs: 200, resolver: () => new Promise(() => {}) });
    const e = await failure(f('http://slow-dns.example/'));
    expect(e.code).toBe('timeout');
    expect(e.message).toContain('host slow-dns.example');
  });

  it('honours the caller signal', async () => {
    const ctl = new AbortController();
    const p = createSafeFetch({ disallowPrivate: false })(`http://127.0.0.1:${port}/hang`, { signal: ctl.signal });
    ctl.abort();
    expect((await failure(p)).code).toBe('network');
  });

  it('bounds the response size, declared or streamed, per client and per call', async () => {
    const f = createSafeFetch({ disallowPrivate: false, maxBytes: 1000 });
    for (const path of ['/big', '/chunked']) {
      const e = await failure(f(`http://127.0.0.1:${port}${path}`));
      expect(e.code).toBe('too_large');
      expect(e.message).toBe('the response of an IP-literal host exceeds 1000 bytes');
    }
    expect((await f(`http://127.0.0.1:${port}/big`, { maxBytes: 5000 })).body).toHaveLength(5000);
  });

  it('reports unreachable hosts and bad JSON as address-free errors', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const f = createSafeFetch({ disallowPrivate: false, resolver: seam([]) });
    const refused = await failure(f(`http://127.0.0.1:${deadPort}/`));
    expect(refused.code).toBe('network');
    expect(refused.message).toBe('outbound request to an IP-literal host failed (ECONNREFUSED)');
    const unknown = await failure(f('http://nowhere.example/'));
    expect(unknown.message).toBe('host nowhere.example could not be resolved (ENOTFOUND)');
    const r = await f(`http://127.0.0.1:${port}/not-json`);
    expect(() => r.json()).toThrow(/response of an IP-literal host is not JSON/);
  });
});
