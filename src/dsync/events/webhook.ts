/**
 * One signed webhook POST: `Content-Type: application/json` and both
 * `BoxyHQ-Signature` and `Ory-Polis-Signature`, each `t=<ms>,s=<hex HMAC-SHA256 of "t.<raw body>">`
 * keyed with the webhook secret, over exactly the bytes sent. Every attempt is signed afresh with
 * the current time (Jackson resent the same `t` on its retries). Sent through the guarded dsync
 * client: address policy, timeout (`dsync.webhook.timeout`), response size limit. Redirects are
 * not followed (a webhook that redirects is misconfigured; the attempt fails with the 3xx).
 * Any 2xx is delivered. Errors never contain the secret or an address.
 */

import type { Clock } from '../../core/clock.ts';
import { webhookSignature } from '../../core/crypto/hmac.ts';
import { metrics } from '../../core/observability/metrics.ts';
import { type KeepAlive, type SafeFetch, SafeFetchError } from '../../core/safe-fetch.ts';
import type { Directory } from '../types.ts';

/** Thrown when an attempt is not delivered: graphile-worker records the message and retries. */
export class DeliveryFailed extends Error {
  override name = 'DeliveryFailed';
}

export interface WebhookAttempt {
  delivered: boolean;
  /** The answer's status; 500 when there was none (Jackson's value for a failed request). */
  status: number;
  /** Why it was not delivered (address-free), undefined when delivered. */
  error: string | undefined;
  startedAt: Date;
  completedAt: Date;
}

/** A directory's events are delivered only when it has a webhook endpoint and secret. */
export const hasWebhook = (d: Pick<Directory, 'webhook'>) => d.webhook.endpoint !== '' && d.webhook.secret !== '';

/** Why the queued events of this directory cannot be delivered (they are dropped), or undefined. */
export function undeliverable(d: Directory | undefined): string | undefined {
  if (!d) return 'directory deleted';
  if (d.deactivated) return 'directory deactivated';
  if (!hasWebhook(d)) return 'directory has no webhook';
  return undefined;
}

/** Jackson's response size limit (`maxContentLength`). */
const MAX_RESPONSE_BYTES = 1_000_000;

/** One POST of a signed event body; every attempt is counted in `gatehouse_webhook_deliveries_total`. */
export async function postWebhook(
  fetch: SafeFetch,
  clock: Clock,
  target: { endpoint: string; secret: string },
  body: string,
  keepAlive?: KeepAlive,
): Promise<WebhookAttempt> {
  const startedAt = clock.now();
  const signature = webhookSignature(target.secret, startedAt.getTime(), body);
  try {
    const res = await fetch(target.endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'BoxyHQ-Signature': signature,
        'Ory-Polis-Signature': signature,
      },
      body,
      redirect: 'manual',
      maxBytes: MAX_RESPONSE_BYTES,
      keepAlive,
    });
    const delivered = res.status >= 200 && res.status < 300;
    metrics.webhookDeliveries.inc({ outcome: delivered ? 'delivered' : 'failed' });
    return {
      delivered,
      status: res.status,
      error: delivered ? undefined : `the webhook endpoint answered ${res.status}`,
      startedAt,
      completedAt: clock.now(),
    };
  } catch (e) {
    metrics.webhookDeliveries.inc({ outcome: 'failed' });
    const error = e instanceof SafeFetchError ? e.message : 'the webhook request failed';
    return { delivered: false, status: 500, error, startedAt, completedAt: clock.now() };
  }
}
