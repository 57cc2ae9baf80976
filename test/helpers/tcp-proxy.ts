/**
 * A TCP proxy on loopback between the app and PostgreSQL, for outage tests. `cut()` drops every
 * open connection and refuses new ones (each accepted socket is destroyed at once), `restore()`
 * forwards again. Nothing is buffered or changed in between.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Open client connections being forwarded. */
  readonly open: number;
  cut(): void;
  /** Like `cut`, but new connections are accepted and then never answered (a black hole). */
  hang(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let down: false | 'refuse' | 'hang' = false;
  const held = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (down === 'refuse') {
      client.destroy();
      return;
    }
    if (down === 'hang') {
      held.add(client);
      client.on('error', () => {}).on('close', () => held.delete(client));
      return;
    }
    const upstream = connect(target.port, target.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const dropAll = () => {
    for (const [a, b] of pairs) {
      a.destroy();
      b.destroy();
    }
    pairs.clear();
  };
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    port,
    get open() {
      return pairs.size;
    },
    cut() {
      down = 'refuse';
      dropAll();
    },
    hang() {
      down = 'hang';
      dropAll();
    },
    restore() {
      down = false;
      for (const h of held) h.destroy();
      held.clear();
    },
    close: () =>
      new Promise<void>((res) => {
        dropAll();
        for (const h of held) h.destroy();
        server.close(() => res());
      }),
  };
}
