/**
 * Directory-sync webhooks end to end: SCIM `PUT /Users/{id}` (one `user.updated` event each) on 8
 * directories → `webhook_deliver` jobs → signed POSTs to a loopback receiver. Reported after the
 * load, once the backlog has drained (bounded wait): events delivered per second (first event
 * created → last one received) and the latency of that path per event (received − created_at).
 */
import { sql } from 'kysely';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import type { TestServerLike } from '../server.ts';
import type { BenchRequest, Scenario } from '../types.ts';

const DIRECTORIES = 8;
const USERS_PER_DIRECTORY = 5;
const DRAIN_LIMIT_MS = 120_000;

const percentile = (sorted: number[], p: number) =>
  sorted.length ? (sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number) : 0;

function webhookScenario(): Scenario {
  const state: { rx?: Receiver; directoryIds: string[]; warmup: number } = { directoryIds: [], warmup: 0 };

  async function drain(server: TestServerLike): Promise<boolean> {
    const deadline = Date.now() + DRAIN_LIMIT_MS;
    for (;;) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from dsync_webhook_outbox`.execute(
        server.container.db,
      );
      if (!rows[0]?.n) return true;
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  return {
    name: 'dsync: SCIM PUT /Users → signed webhook (8 directories)',
    listener: 'public',
    async setup(server) {
      const rx = await startReceiver();
      state.rx = rx;
      const s = server.container.dsync.services;
      const requests: BenchRequest[] = [];
      for (let d = 0; d < DIRECTORIES; d++) {
        const dir = await s.directories.create({
          tenant: 'bench',
          product: `p${d}`,
          type: 'generic-scim-v2',
          webhook_url: rx.url,
          webhook_secret: 'bench-webhook-secret',
        });
        state.directoryIds.push(dir.id);
        const path = new URL(dir.scim.endpoint ?? '').pathname;
        for (let u = 0; u < USERS_PER_DIRECTORY; u++) {
          const body = JSON.stringify({
            schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
            userName: `bench-${d}-${u}@example.com`,
            name: { givenName: 'Bench', familyName: `User${u}` },
            emails: [{ value: `bench-${d}-${u}@example.com`, primary: true }],
            active: true,
          });
          const created = await s.scim.handle({
            method: 'POST',
            directoryId: dir.id,
            resourceType: 'users',
            apiSecret: dir.scim.secret,
            body: JSON.parse(body),
          });
          const id = (created.data as { id: string }).id;
          requests.push({
            method: 'PUT',
            path: `${path}/Users/${id}`,
            headers: { authorization: `Bearer ${dir.scim.secret}`, 'content-type': 'application/scim+json' },
            body,
          });
        }
      }
      await drain(server);
      state.warmup = rx.requests.length;
      return requests;
    },
    async report(server) {
      const rx = state.rx as Receiver;
      const drained = await drain(server);
      const got = rx.delivered().slice(state.warmup);
      await rx.close();
      const latencies = got.map((r) => r.at - Date.parse(r.body.created_at)).sort((a, b) => a - b);
      const first = Math.min(...got.map((r) => Date.parse(r.body.created_at)));
      const last = Math.max(...got.map((r) => r.at));
      const ids = new Set(got.map((r) => r.body.id));
      return {
        'events delivered': got.length,
        duplicates: got.length - ids.size,
        'delivered/s': got.length ? Math.round((got.length / (last - first)) * 1000) : 0,
        'e2e p50 ms': percentile(latencies, 50),
        'e2e p99 ms': percentile(latencies, 99),
        drained: drained ? 'yes' : `no (${DRAIN_LIMIT_MS / 1000}s limit)`,
      };
    },
  };
}

export const scenarios: Scenario[] = [webhookScenario()];
