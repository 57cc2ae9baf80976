/**
 * A loopback webhook receiver (node:http on 127.0.0.1) for delivery tests: records every request
 * with its raw body, answers as `respond` says (a status, or `'hold'` to keep the request open
 * until `release()`), and verifies Jackson's signatures independently of the code under test.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JsonBody } from './json.ts';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: JsonBody;
  /** ms since epoch, when the body was complete */
  at: number;
  /** the status answered (undefined while held or when the connection died first) */
  status?: number;
}

/** A status, `'hold'` (until `release()`), or a status sent after a delay. */
export type Responder = (r: ReceivedRequest, n: number) => number | 'hold' | { status: number; delayMs: number };

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  respond: Responder;
  /** Answers every held request with `status` (default 200). */
  release(status?: number): void;
  held(): number;
  /** Requests answered 2xx. */
  delivered(): ReceivedRequest[];
  close(): Promise<void>;
}

export async function startReceiver(respond: Responder = () => 200): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const holding: Array<{ res: ServerResponse; rec: ReceivedRequest }> = [];
  const answer = (res: ServerResponse, rec: ReceivedRequest, status: number) => {
    if (res.destroyed) return;
    rec.status = status;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(status === 204 ? undefined : '{"ok":true}');
  };
  const r: Receiver = {
    url: '',
    requests,
    respond,
    release(status = 200) {
      for (const h of holding.splice(0)) answer(h.res, h.rec, status);
    },
    held: () => holding.filter((h) => !h.res.destroyed).length,
    delivered: () => requests.filter((x) => x.status !== undefined && x.status >= 200 && x.status < 300),
    close: () =>
      new Promise((res) => {
        for (const h of holding.splice(0)) h.res.destroy();
        server.closeAllConnections();
        server.close(() => res());
      }),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const rec: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        raw,
        body,
        at: Date.now(),
      };
      requests.push(rec);
      const what = r.respond(rec, requests.length);
      if (what === 'hold') holding.push({ res, rec });
      else if (typeof what === 'number') answer(res, rec, what);
      else setTimeout(() => answer(res, rec, what.status), what.delayMs);
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return r;
}

/**
 * Checks a `t=<ms>,s=<hex>` header against the raw body with the secret, computed here with
 * node:crypto (HMAC-SHA256 over `${t}.${raw}`), as a receiver would.
 */
export function verifySignature(header: string | string[] | undefined, raw: string, secret: string): boolean {
  if (typeof header !== 'string') return false;
  const m = /^t=(\d+),s=([0-9a-f]{64})$/.exec(header);
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.${raw}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2] as string, 'hex'));
}
