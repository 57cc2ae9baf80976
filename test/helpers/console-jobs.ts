/**
 * The console's job and webhook pages under test: a webhook receiver that fails until told to
 * answer, a directory whose one delivery job has failed for good, and a signed-in operator.
 */
import { expect } from 'vitest';
import type { listFailedJobs } from '../../src/core/jobs/admin.ts';
import { eventually, type TestServer } from './apps.ts';
import { consoleOperator } from './console.ts';
import { createDirectory, scimClient } from './dsync.ts';
import { type Receiver, startReceiver } from './receiver.ts';
import { scimUser } from './webhooks.ts';

/** A receiver that answers 503 until `up` is set. */
export type SwitchableReceiver = Receiver & { up: boolean };
type FailedJob = Awaited<ReturnType<typeof listFailedJobs>>[number];

/** A receiver answering 503 until `up`; kept in `all` so that the file closes it. */
export async function failingReceiver(all: SwitchableReceiver[]): Promise<SwitchableReceiver> {
  const rx = (await startReceiver(() => (rx.up ? 200 : 503))) as SwitchableReceiver;
  rx.up = false;
  all.push(rx);
  return rx;
}

/** An operator signed in over HTTP, on the console's start page with a CSRF token. */
export async function signedInOperator(s: TestServer) {
  const op = await consoleOperator(s);
  expect(new URL(op.url).pathname).toBe('/console');
  expect(op.csrf).not.toBe('');
  return op;
}

/**
 * A directory whose one delivery job has failed for good (one SCIM change, its receiver down; the
 * server runs with `dsync.webhook.max_attempts: 1`), found by `failed` where job state lives.
 */
export async function deadDirectory(
  s: TestServer,
  tenant: string,
  o: { receivers: SwitchableReceiver[]; secret: string; failed: (directoryId: string) => Promise<FailedJob[]> },
) {
  const rx = await failingReceiver(o.receivers);
  const d = await createDirectory(s, {
    name: `${tenant} directory`,
    tenant,
    product: 'crm',
    webhook_url: rx.url,
    webhook_secret: o.secret,
    log_webhook_events: true,
  });
  expect((await scimClient(s, d)('POST', '/Users', scimUser(`someone-${tenant}`))).status).toBe(201);
  const [job] = await eventually(async () => {
    const j = await o.failed(d.id);
    return j.length ? j : undefined;
  }, 20_000);
  return { d, rx, job: job as FailedJob };
}
