/**
 * A fake Google on loopback for the Workspace sync tests: the OAuth authorization endpoint (it
 * "consents" at once and redirects back with a code), the token endpoint (authorization_code and
 * refresh_token grants, client_secret_post, one-time codes, expiring access tokens, revocable
 * refresh tokens) and the Admin SDK Directory API list calls for users, groups and members, with
 * Google's JSON shapes and paging through `nextPageToken`. Tests change its data between syncs,
 * inject failures and hold requests to observe a run in progress.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

export interface FakeRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  form: Record<string, string>;
}

export type GUser = Record<string, unknown> & { id: string; primaryEmail: string };
export type GGroup = Record<string, unknown> & { id: string; name: string };
export type GMember = Record<string, unknown> & { id: string; type: string };

export interface FakeGoogle {
  url: string;
  authUrl: string;
  tokenUrl: string;
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  users: GUser[];
  groups: GGroup[];
  members: Map<string, GMember[]>;
  requests: FakeRequest[];
  /** Access tokens issued, newest last. */
  accessTokens: string[];
  refreshTokens: string[];
  /** Answer a request with this status (and Google's error body) instead, when it returns one. */
  failWith: ((r: FakeRequest) => number | undefined) | undefined;
  /** Seconds until a new access token expires. */
  expiresIn: number;
  /** A code as the consent screen would hand it out for this redirect URI. */
  issueCode(redirectUri: string): string;
  expireAccessTokens(): void;
  revokeRefreshTokens(): void;
  /** Holds matching requests until `release()`; `reached` resolves when the first one arrives. */
  hold(match: (r: FakeRequest) => boolean): { reached: Promise<void>; release(): void };
  apiCalls(kind?: 'users' | 'groups' | 'members'): FakeRequest[];
  close(): Promise<void>;
}

const SCOPES = [
  'https://www.googleapis.com/auth/admin.directory.user.readonly',
  'https://www.googleapis.com/auth/admin.directory.group.readonly',
  'https://www.googleapis.com/auth/admin.directory.group.member.readonly',
];

const rand = (n = 18) => randomBytes(n).toString('base64url');
const etag = () => `"${rand(12)}/${rand(9)}"`;

export function googleUser(i: number, domain = 'acme.test', extra: Record<string, unknown> = {}): GUser {
  const email = `user${i}@${domain}`;
  return {
    kind: 'admin#directory#user',
    id: String(100000000000000000000n + BigInt(i)),
    etag: etag(),
    primaryEmail: email,
    name: { givenName: `First${i}`, familyName: `Last${i}`, fullName: `First${i} Last${i}` },
    isAdmin: i === 1,
    isDelegatedAdmin: false,
    lastLoginTime: '2026-01-02T03:04:05.000Z',
    creationTime: '2025-06-01T00:00:00.000Z',
    agreedToTerms: true,
    suspended: false,
    archived: false,
    changePasswordAtNextLogin: false,
    ipWhitelisted: false,
    emails: [{ address: email, primary: true }],
    customerId: 'C01a2b3c4',
    orgUnitPath: '/',
    isMailboxSetup: true,
    isEnrolledIn2Sv: false,
    isEnforcedIn2Sv: false,
    includeInGlobalAddressList: true,
    thumbnailPhotoEtag: etag(),
    ...extra,
  };
}

export function googleGroup(key: string, name: string, domain = 'acme.test'): GGroup {
  return {
    kind: 'admin#directory#group',
    id: `0${key}${'x'.repeat(Math.max(0, 14 - key.length))}`,
    etag: etag(),
    email: `${key}@${domain}`,
    name,
    directMembersCount: '0',
    description: `${name} team`,
    adminCreated: true,
    nonEditableAliases: [`${key}@${domain}.test-google-a.com`],
  };
}

export function googleMember(id: string, type = 'USER', email = `${id}@acme.test`): GMember {
  return { kind: 'admin#directory#member', etag: etag(), id, email, role: 'MEMBER', type, status: 'ACTIVE' };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((res, rej) => {
    let s = '';
    req.on('data', (d) => (s += d));
    req.on('end', () => res(s));
    req.on('error', rej);
  });
}

const apiError = (code: number, status: string, message: string) => ({
  error: { code, message, errors: [{ message, domain: 'global', reason: status.toLowerCase() }], status },
});

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  res.end(JSON.stringify(body));
}

export async function startFakeGoogle(o: { clientId?: string; clientSecret?: string } = {}): Promise<FakeGoogle> {
  const codes = new Map<string, string>(); // code → redirect URI
  const access = new Map<string, number>(); // token → expiry (ms)
  const refresh = new Set<string>();
  const holds: Array<{ match: (r: FakeRequest) => boolean; gate: Promise<void>; arrived: () => void }> = [];

  function issueTokens(withRefresh: boolean) {
    const a = `ya29.${rand(24)}`;
    access.set(a, Date.now() + fake.expiresIn * 1000);
    fake.accessTokens.push(a);
    const body: Record<string, unknown> = {
      access_token: a,
      expires_in: fake.expiresIn,
      scope: SCOPES.join(' '),
      token_type: 'Bearer',
    };
    if (withRefresh) {
      const r = `1//${rand(30)}`;
      refresh.add(r);
      fake.refreshTokens.push(r);
      body.refresh_token = r;
    }
    return body;
  }

  function tokenEndpoint(r: FakeRequest, res: ServerResponse) {
    const f = r.form;
    if (f.client_id !== fake.clientId || f.client_secret !== fake.clientSecret)
      return json(res, 401, { error: 'invalid_client', error_description: 'Unauthorized' });
    if (f.grant_type === 'authorization_code') {
      const redirect = f.code ? codes.get(f.code) : undefined;
      if (f.code) codes.delete(f.code);
      if (!redirect || redirect !== f.redirect_uri)
        return json(res, 400, { error: 'invalid_grant', error_description: 'Bad Request' });
      return json(res, 200, issueTokens(true));
    }
    if (f.grant_type === 'refresh_token') {
      if (!f.refresh_token || !refresh.has(f.refresh_token))
        return json(res, 400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
      return json(res, 200, issueTokens(false));
    }
    return json(res, 400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type' });
  }

  function page<T>(items: T[], r: FakeRequest) {
    const size = Math.min(Number(r.query.maxResults ?? 100), 500);
    const offset = r.query.pageToken ? Number(Buffer.from(r.query.pageToken, 'base64url').toString()) : 0;
    const slice = items.slice(offset, offset + size);
    const next = offset + size < items.length ? Buffer.from(String(offset + size)).toString('base64url') : undefined;
    return { slice, next };
  }

  function directoryApi(r: FakeRequest, res: ServerResponse) {
    const token = /^Bearer (.+)$/.exec(r.authorization ?? '')?.[1];
    const exp = token ? access.get(token) : undefined;
    if (exp === undefined || exp <= Date.now())
      return json(res, 401, apiError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'));
    const base = '/admin/directory/v1';
    const members = new RegExp(`^${base}/groups/([^/]+)/members$`).exec(r.path);
    if (r.path === `${base}/users` || r.path === `${base}/groups`) {
      if (r.query.customer !== 'my_customer') return json(res, 400, apiError(400, 'INVALID_ARGUMENT', 'Bad Request'));
      const kind = r.path.endsWith('users') ? 'users' : 'groups';
      const { slice, next } = page<unknown>(kind === 'users' ? fake.users : fake.groups, r);
      return json(res, 200, {
        kind: `admin#directory#${kind}`,
        etag: etag(),
        ...(slice.length ? { [kind]: slice } : {}),
        ...(next ? { nextPageToken: next } : {}),
      });
    }
    if (members) {
      const groupKey = decodeURIComponent(members[1] as string);
      if (!fake.groups.some((g) => g.id === groupKey))
        return json(res, 404, apiError(404, 'NOT_FOUND', 'Resource Not Found: groupKey'));
      const { slice, next } = page<unknown>(fake.members.get(groupKey) ?? [], r);
      return json(res, 200, {
        kind: 'admin#directory#members',
        etag: etag(),
        ...(slice.length ? { members: slice } : {}),
        ...(next ? { nextPageToken: next } : {}),
      });
    }
    return json(res, 404, apiError(404, 'NOT_FOUND', 'Not Found'));
  }

  function authorize(r: FakeRequest, res: ServerResponse) {
    const q = r.query;
    if (q.client_id !== fake.clientId || q.response_type !== 'code' || !q.redirect_uri)
      return json(res, 400, { error: 'invalid_request' });
    const code = `4/${rand(30)}`;
    codes.set(code, q.redirect_uri);
    const to = new URL(q.redirect_uri);
    to.searchParams.set('code', code);
    to.searchParams.set('scope', q.scope ?? '');
    if (q.state !== undefined) to.searchParams.set('state', q.state);
    res.writeHead(302, { location: to.toString() });
    res.end();
  }

  const server = createServer(async (req, res) => {
    const u = new URL(req.url ?? '/', 'http://fake');
    const body = await readBody(req);
    const r: FakeRequest = {
      method: req.method ?? 'GET',
      path: u.pathname,
      query: Object.fromEntries(u.searchParams),
      authorization: req.headers.authorization,
      form: req.headers['content-type']?.startsWith('application/x-www-form-urlencoded')
        ? Object.fromEntries(new URLSearchParams(body))
        : {},
    };
    fake.requests.push(r);
    for (const h of holds)
      if (h.match(r)) {
        h.arrived();
        await h.gate;
      }
    const failure = fake.failWith?.(r);
    if (failure) return json(res, failure, apiError(failure, 'BACKEND_ERROR', 'Backend Error'));
    if (r.path === '/o/oauth2/v2/auth' && r.method === 'GET') return authorize(r, res);
    if (r.path === '/token' && r.method === 'POST') return tokenEndpoint(r, res);
    if (r.path.startsWith('/admin/directory/v1/') && r.method === 'GET') return directoryApi(r, res);
    return json(res, 404, apiError(404, 'NOT_FOUND', 'Not Found'));
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const url = `http://127.0.0.1:${port}`;

  const fake: FakeGoogle = {
    url,
    authUrl: `${url}/o/oauth2/v2/auth`,
    tokenUrl: `${url}/token`,
    apiUrl: url,
    clientId: o.clientId ?? 'fake-client-id.apps.googleusercontent.com',
    clientSecret: o.clientSecret ?? 'GOCSPX-fake-client-secret',
    users: [],
    groups: [],
    members: new Map(),
    requests: [],
    accessTokens: [],
    refreshTokens: [],
    failWith: undefined,
    expiresIn: 3599,
    issueCode(redirectUri) {
      const code = `4/${rand(30)}`;
      codes.set(code, redirectUri);
      return code;
    },
    expireAccessTokens() {
      for (const k of access.keys()) access.set(k, 0);
    },
    revokeRefreshTokens() {
      refresh.clear();
    },
    hold(match) {
      let release!: () => void;
      let arrived!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const reached = new Promise<void>((r) => (arrived = r));
      const h = { match, gate, arrived };
      holds.push(h);
      return {
        reached,
        release: () => {
          holds.splice(holds.indexOf(h), 1);
          release();
        },
      };
    },
    apiCalls(kind) {
      return fake.requests.filter(
        (r) =>
          r.path.startsWith('/admin/directory/v1/') &&
          (kind === undefined ||
            (kind === 'members' ? r.path.endsWith('/members') : r.path === `/admin/directory/v1/${kind}`)),
      );
    },
    close: () =>
      new Promise<void>((res) => {
        server.closeAllConnections();
        server.close(() => res());
      }),
  };
  return fake;
}

/** Config overrides that point gatehouse's Google client at the fake. */
export const googleConfig = (fake: FakeGoogle): Record<string, unknown> => ({
  'dsync.google.client_id': fake.clientId,
  'dsync.google.client_secret': fake.clientSecret,
  'dsync.google.auth_url': fake.authUrl,
  'dsync.google.token_url': fake.tokenUrl,
  'dsync.google.api_url': fake.apiUrl,
  'dsync.disallow_private_ip_ranges': false,
});
