import Router from '@koa/router';
import { describe, expect, it } from 'vitest';
import { createApp, listen } from '../../../src/core/http/apps.ts';
import { silentLogger } from '../../../src/core/log.ts';

describe('graceful close of a listener', () => {
  it('stops accepting new connections but lets an in-flight request finish', async () => {
    const r = new Router();
    let started!: () => void;
    const inHandler = new Promise<void>((res) => (started = res));
    r.get('/slow', async (ctx) => {
      started();
      await new Promise((res) => setTimeout(res, 300));
      ctx.body = { done: true };
    });
    const l = await listen(createApp({ kind: 'public', log: silentLogger(), routers: [r] }), 0, '127.0.0.1');
    const inflight = fetch(`${l.url}/slow`);
    await inHandler;
    const closed = l.close(5_000);
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ done: true });
    await closed;
    await expect(fetch(`${l.url}/slow`)).rejects.toThrow();
  });
});
