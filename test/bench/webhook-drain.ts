/**
 * `node test/bench/webhook-drain.ts`: how fast real-time webhook delivery drains a backlog, apart
 * from how fast SCIM writes come in. gatehouse (`serve all` with its worker, its own process, a
 * fresh database) gets 8 directories whose webhook is a loopback receiver that first holds every
 * request: SCIM `PUT /Users/{id}` then queue BENCH_DRAIN_EVENTS events (default 1,600) while each
 * directory's sender waits on its first POST. The receiver then answers the held requests and every
 * later one with 200 at once, and the report gives the events delivered per second from then to the
 * last receipt, and checks what delivery promises: every event delivered exactly once by id, in
 * `seq` order per directory (the order of the first 2xx of each id). The one setting changed is
 * `dsync.webhook.timeout` (300 s, so that the held first POSTs outlast the writes); it plays no part
 * once the receiver answers at once.
 *
 *   DATABASE_URL=postgres://… node test/bench/webhook-drain.ts
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startReceiver } from '../helpers/receiver.ts';
import { startGatehouse } from './proc.ts';

const DIRECTORIES = 8;
const EVENTS = Number(process.env.BENCH_DRAIN_EVENTS ?? 1600);
const CONCURRENCY = 20;
const LIMIT_MS = 180_000;
const API_KEY = 'bench-api-key';
const SCIM = { 'content-type': 'application/scim+json' };

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('DATABASE_URL is required\n');
  process.exit(2);
}

const user = (email: string, n: number) =>
  JSON.stringify({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: email,
    name: { givenName: `G${n}`, familyName: 'Drain' },
    emails: [{ primary: true, value: email, type: 'work' }],
    active: true,
  });

const say = (s: string) => process.stderr.write(`${s}\n`);
const rx = await startReceiver(() => 'hold');
const gh = await startGatehouse(databaseUrl, { 'dsync.webhook.timeout': '300s' });
const db = new pg.Client({ connectionString: gh.dsn });
await db.connect();
try {
  const writes: Array<() => Promise<void>> = [];
  for (let d = 0; d < DIRECTORIES; d++) {
    const r = await fetch(`${gh.adminUrl}/api/v1/dsync`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Api-Key ${API_KEY}` },
      body: JSON.stringify({
        tenant: 'drain',
        product: `drain-${d}-${randomBytes(3).toString('hex')}`,
        type: 'okta-scim-v2',
        webhook_url: rx.url,
        webhook_secret: 'bench-webhook-secret',
      }),
    });
    if (r.status !== 201) throw new Error(`directory create answered ${r.status}: ${await r.text()}`);
    const dir = ((await r.json()) as { data: { scim: { endpoint: string; secret: string } } }).data.scim;
    const base = `${gh.url}${new URL(dir.endpoint).pathname}`;
    const auth = { authorization: `Bearer ${dir.secret}` };
    const email = `drain-${d}@example.com`;
    const created = await fetch(`${base}/Users`, {
      method: 'POST',
      headers: { ...SCIM, ...auth },
      body: user(email, 0),
    });
    if (created.status !== 201) throw new Error(`user create answered ${created.status}: ${await created.text()}`);
    const id = ((await created.json()) as { id: string }).id;
    for (let n = 1; n < EVENTS / DIRECTORIES; n++)
      writes.push(async () => {
        const res = await fetch(`${base}/Users/${id}`, {
          method: 'PUT',
          headers: { ...SCIM, ...auth },
          body: user(email, n),
        });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`PUT answered ${res.status}: ${await res.text()}`);
      });
  }
  say(`queueing ${EVENTS} events on ${DIRECTORIES} directories (receiver holding)…`);
  const started = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < writes.length) await (writes[next++] as () => Promise<void>)();
    }),
  );
  const writeSeconds = (Date.now() - started) / 1000;
  const queued = Number((await db.query('select count(*)::int as n from dsync_webhook_outbox')).rows[0].n);
  say(
    `${queued} events queued in ${writeSeconds.toFixed(1)} s (${rx.held()} first POSTs held); the receiver now answers 200`,
  );
  const flippedAt = Date.now();
  rx.respond = () => 200;
  rx.release(200);
  const deadline = Date.now() + LIMIT_MS;
  for (;;) {
    const n = Number((await db.query('select count(*)::int as n from dsync_webhook_outbox')).rows[0].n);
    if (!n || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const ok = rx.delivered();
  // A receipt's `at` is when its body arrived: the held first POSTs arrived before the flip.
  const first = flippedAt;
  const last = Math.max(...ok.map((r) => r.at));
  const ids = new Set(ok.map((r) => r.body.id as string));
  const { rows } = await db.query<{ id: string; directory_id: string; seq: string }>(
    'select id, directory_id, seq from dsync_events',
  );
  const dirOf = new Map(rows.map((r) => [r.id, r.directory_id]));
  const seqOf = new Map(rows.map((r) => [r.id, Number(r.seq)]));
  // Per directory, the first 2xx of each id must come in seq order.
  const seen = new Set<string>();
  const lastSeq = new Map<string, number>();
  let outOfOrder = 0;
  for (const r of ok) {
    const id = r.body.id as string;
    if (seen.has(id)) continue;
    seen.add(id);
    const d = dirOf.get(id) ?? '';
    const s = seqOf.get(id) ?? 0;
    if (s < (lastSeq.get(d) ?? 0)) outOfOrder++;
    lastSeq.set(d, s);
  }
  // Gaps between one directory's consecutive receipts: where a sender's time goes.
  const gaps: number[] = [];
  const lastAt = new Map<string, number>();
  for (const r of ok) {
    const d = dirOf.get(r.body.id as string) ?? '';
    const prev = lastAt.get(d);
    if (prev !== undefined) gaps.push(r.at - prev);
    lastAt.set(d, r.at);
  }
  gaps.sort((a, b) => a - b);
  // Per directory: its receipts after the first (the first may have waited on the held POST).
  const span = new Map<string, { first: number; second?: number; last: number; n: number }>();
  for (const r of ok) {
    const d = dirOf.get(r.body.id as string) ?? '';
    const x = span.get(d) ?? { first: r.at, last: r.at, n: 0 };
    if (x.n === 1) x.second = r.at;
    x.last = r.at;
    x.n++;
    span.set(d, x);
  }
  const perDir = [...span.values()]
    .map((x) => Math.round(((x.n - 2) / Math.max(1, x.last - (x.second ?? x.last))) * 1000))
    .sort((a, b) => a - b);
  if (process.env.BENCH_DRAIN_TIMELINE)
    for (const [d, x] of span) say(`${d.slice(0, 8)}: ${x.n} events, ${x.first - first} → ${x.last - first} ms`);
  const pct = (q: number) => gaps[Math.min(gaps.length - 1, Math.floor((q / 100) * gaps.length))] ?? 0;
  const report = {
    'events queued': queued,
    'events delivered (distinct ids)': ids.size,
    'duplicate 2xx': ok.length - ids.size,
    'out of order': outOfOrder,
    'requests not answered 2xx': rx.requests.length - ok.length,
    'drain seconds (receiver answering → last receipt)': ((last - first) / 1000).toFixed(2),
    'delivered/s': Math.round((ids.size / Math.max(1, last - first)) * 1000),
    "one directory's sender, delivered/s after its first event (min/median/max)": `${perDir[0]}/${perDir[Math.floor(perDir.length / 2)]}/${perDir.at(-1)}`,
    "gap between one directory's receipts p50/p90/p99/max ms": `${pct(50)}/${pct(90)}/${pct(99)}/${gaps.at(-1) ?? 0}`,
    'RSS MB after': Math.round((await gh.stats()).rss / 1048576),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (ids.size < queued || outOfOrder || ok.length !== ids.size) process.exitCode = 1;
} finally {
  await db.end();
  await gh.stop();
  await rx.close();
}
