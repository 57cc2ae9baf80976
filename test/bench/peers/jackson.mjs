/**
 * Peer: BoxyHQ Jackson's directory-sync controller as a library on PostgreSQL (a database of its
 * own on the same server gatehouse uses), behind a minimal node:http front that maps SCIM paths to
 * `directorySyncController.requests.handle` as Jackson's Next.js API route does. Started by the bench
 * runner with an IPC channel: it answers `{ type: 'stats' }` with its RSS and SQL statement count.
 */
import { createServer } from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const pg = require('pg');
let queries = 0;
const statements = new Map();
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function counted(...args) {
  queries++;
  const q = args[0];
  const text = (typeof q === 'string' ? q : (q?.text ?? '?')).replace(/\s+/g, ' ').trim().slice(0, 160);
  statements.set(text, (statements.get(text) ?? 0) + 1);
  return query.apply(this, args);
};
const jackson = require('@boxyhq/saml-jackson');

const dbUrl = process.env.PEER_DATABASE_URL;
const ret = await (jackson.default ?? jackson)({
  externalUrl: 'http://127.0.0.1',
  samlPath: '/api/oauth/saml',
  db: { engine: 'sql', type: 'postgres', url: dbUrl, manualMigration: false },
  noAnalytics: true,
  logger: { info() {}, warn() {}, error() {}, debug() {} },
});
const dsync = ret.directorySyncController;

const readBody = (req) =>
  new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });

// /api/scim/v2.0/{directoryId}/{Users|Groups}[/{id}]
const SCIM = /^\/api\/scim\/v2\.0\/([^/]+)\/(Users|Groups)(?:\/([^/?]+))?/;

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'POST' && url.pathname === '/bench/directories') {
      const body = JSON.parse(await readBody(req));
      const { data, error } = await dsync.directories.create(body);
      res.writeHead(error ? 400 : 201, { 'content-type': 'application/json' });
      res.end(JSON.stringify(error ?? data));
      return;
    }
    const m = SCIM.exec(url.pathname);
    if (!m) {
      res.writeHead(404).end();
      return;
    }
    const raw = await readBody(req);
    const auth = req.headers.authorization ?? '';
    const result = await dsync.requests.handle({
      method: req.method ?? 'GET',
      body: raw ? JSON.parse(raw) : undefined,
      directoryId: m[1],
      resourceType: m[2].toLowerCase(),
      resourceId: m[3],
      apiSecret: auth.split(' ')[1] ?? null,
      query: {
        count: url.searchParams.get('count') ? Number(url.searchParams.get('count')) : undefined,
        startIndex: url.searchParams.get('startIndex') ? Number(url.searchParams.get('startIndex')) : undefined,
        filter: url.searchParams.get('filter') ?? undefined,
      },
    });
    res.writeHead(result.status, { 'content-type': 'application/scim+json' });
    res.end(JSON.stringify(result.data ?? {}));
  } catch (e) {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: String(e?.message ?? e) }));
  }
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ type: 'ready', url: `http://127.0.0.1:${server.address().port}` });
});
process.on('message', (m) => {
  if (m?.type === 'stats')
    process.send?.({
      type: 'stats',
      rss: process.memoryUsage().rss,
      queries,
      statements: Object.fromEntries(statements),
    });
  if (m?.type === 'stop') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 3000).unref();
  }
});
