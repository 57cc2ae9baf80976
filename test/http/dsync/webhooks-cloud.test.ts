/**
 * Events of a cloud-directory (Google Workspace) sync go through the same delivery as SCIM's: the
 * directory's webhook receives, in order and signed, exactly the objects the sync callback got.
 */
import type { Runner } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEvent } from '../../../src/dsync/types.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { startDsyncServer } from '../../helpers/dsync.ts';
import { type FakeGoogle, googleConfig, startFakeGoogle } from '../../helpers/fake-google.ts';
import { googleHarness } from '../../helpers/google-harness.ts';
import { type Receiver, startReceiver, verifySignature } from '../../helpers/receiver.ts';
import { outboxCount } from '../../helpers/webhooks.ts';

const SECRET = 'whsec-cloud';
let fake: FakeGoogle;
let s: TestServer;
let rx: Receiver;
let runner: Runner;

beforeAll(async () => {
  fake = await startFakeGoogle();
  rx = await startReceiver();
  s = await startDsyncServer(googleConfig(fake));
  runner = await s.startWorker({ concurrency: 4 });
});
afterAll(async () => {
  await runner?.stop();
  await s?.close();
  await fake?.close();
  await rx?.close();
});

const { ctl, authorizedDirectory, workspace } = googleHarness(
  () => s,
  () => fake,
);

describe('cloud sync events', () => {
  it('are delivered to the directory webhook like SCIM events, the same objects the callback got', async () => {
    workspace(5);
    const d = await authorizedDirectory({ webhook_url: rx.url, webhook_secret: SECRET });
    const received: WebhookEvent[] = [];
    const r = await ctl().sync((e) => {
      received.push(e);
    });
    expect(r.data?.map((x) => x.status)).toEqual(['completed']);
    // 5 users, 2 groups, 3 USER memberships
    expect(received).toHaveLength(10);
    await eventually(async () => (await outboxCount(s, d.id)) === 0 && rx.delivered().length === 10, 20_000);
    const bodies = rx.delivered().map((x) => x.body as WebhookEvent);
    expect(bodies).toEqual(received);
    expect(bodies.map((e) => e.seq)).toEqual(Array.from({ length: 10 }, (_v, i) => i + 1));
    for (const x of rx.delivered()) expect(verifySignature(x.headers['boxyhq-signature'], x.raw, SECRET)).toBe(true);
  });
});
