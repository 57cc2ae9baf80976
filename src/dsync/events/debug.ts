/**
 * `dsync.debug_webhooks` (Jackson's `dsync.debugWebhooks`): logs every webhook POST body and the
 * receiver's answer at info. It wraps the outbound client that the senders use, so delivery
 * itself is unchanged. Values are redacted: the event's identifiers stay readable (event type,
 * tenant, product, directory and resource ids, seq, times), every other string becomes
 * `[redacted]`, and the answer is cut to 512 characters with e-mail addresses and long tokens
 * masked. The endpoint is logged without its query string (it may carry a credential).
 */
import type { Logger } from '../../core/log.ts';
import type { SafeFetch } from '../../core/safe-fetch.ts';

const KEEP = new Set(['event', 'tenant', 'product', 'directory_id', 'id', 'seq', 'created_at', 'active', 'name']);

export function redactPayload(v: unknown, key = ''): unknown {
  if (Array.isArray(v)) return v.map((x) => redactPayload(x, key));
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, redactPayload(x, k)]));
  if (typeof v === 'string' && !KEEP.has(key)) return '[redacted]';
  return v;
}

export function redactAnswer(text: string): string {
  return text
    .slice(0, 512)
    .replace(/[^\s@"'<>]+@[^\s@"'<>]+/g, '[email]')
    .replace(/[A-Za-z0-9_\-.=+/]{24,}/g, '[token]');
}

function endpointOf(url: string | URL): string {
  try {
    const u = new URL(String(url));
    return `${u.origin}${u.pathname}`;
  } catch {
    return '[invalid url]';
  }
}

/** The client, logging each POST and its answer (or failure) at info. */
export function debugWebhooks(fetch: SafeFetch, log: Logger): SafeFetch {
  const wrapped = async (url: string | URL, init: Parameters<SafeFetch>[1] = {}) => {
    let body: unknown = init.body;
    try {
      body = typeof init.body === 'string' ? redactPayload(JSON.parse(init.body)) : '[binary]';
    } catch {
      body = '[not JSON]';
    }
    const endpoint = endpointOf(url);
    try {
      const res = await fetch(url, init);
      log.info({ endpoint, body, status: res.status, answer: redactAnswer(res.text()) }, 'dsync webhook');
      return res;
    } catch (e) {
      log.info({ endpoint, body, error: e instanceof Error ? e.name : 'error' }, 'dsync webhook failed');
      throw e;
    }
  };
  return Object.assign(wrapped, { check: (u: string | URL) => fetch.check(u) });
}
