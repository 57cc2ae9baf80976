import { describe, expect, it } from 'vitest';
import { createApp, listen } from '../../../src/core/http/apps.ts';
import { RouteTable } from '../../../src/core/http/routes.ts';
import { silentLogger } from '../../../src/core/log.ts';
import { serve } from '../../../src/server.ts';
import { freePort, startTestServer } from '../../helpers/apps.ts';

describe('graceful close of a listener', () => {
  it('stops accepting new connections but lets an in-flight request finish', async () => {
    const table = new RouteTable();
    const r = table.group({ access: 'public' });
    let started!: () => void;
    const inHandler = new Promise<void>((res) => (started = res));
    r.get('/slow', async (ctx) => {
      started();
      await new Promise((res) => setTimeout(res, 300));
      ctx.body = { done: true };
    });
    const l = await listen(createApp({ kind: 'public', log: silentLogger(), routes: table.routes }), 0, '127.0.0.1');
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

describe('serve with a port taken', () => {
  it('fails with EADDRINUSE and leaves no listener of its own behind', async () => {
    const s = await startTestServer();
    try {
      const taken = Number(new URL(s.adminUrl).port);
      const publicPort = await freePort();
      await expect(
        serve(s.container, 'all', { public: publicPort, admin: taken, host: '127.0.0.1' }),
      ).rejects.toMatchObject({ code: 'EADDRINUSE' });
      // The public listener opened before the failure was closed: its port is free again.
      const again = await listen(
        createApp({ kind: 'public', log: silentLogger(), routes: [] }),
        publicPort,
        '127.0.0.1',
      );
      await again.close(0);
    } finally {
      await s.close();
    }
  });
});
