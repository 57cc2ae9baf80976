/**
 * A tiny server speaking the PostgreSQL wire protocol on loopback. It answers every simple query
 * with one text row (`version` column) — enough to stand in for a CockroachDB server in the
 * startup dialect check. It records the queries it received.
 */
import { createServer, type Server, type Socket } from 'node:net';

function msg(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'ascii');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}
const cstr = (s: string) => Buffer.from(`${s}\0`, 'utf8');
const i16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const i32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

export interface FakePg {
  port: number;
  queries: string[];
  close(): Promise<void>;
}

export async function startFakePg(versionString: string): Promise<FakePg> {
  const queries: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    let buf = Buffer.alloc(0);
    let started = false;
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        if (!started) {
          if (buf.length < 8) return;
          const len = buf.readInt32BE(0);
          if (buf.length < len) return;
          const code = buf.readInt32BE(4);
          buf = buf.subarray(len);
          if (code === 80877103) {
            sock.write('N'); // no SSL
            continue;
          }
          started = true;
          sock.write(
            Buffer.concat([
              msg('R', i32(0)),
              msg('S', Buffer.concat([cstr('server_version'), cstr('13.0.0')])),
              msg('S', Buffer.concat([cstr('client_encoding'), cstr('UTF8')])),
              msg('K', Buffer.concat([i32(1), i32(2)])),
              msg('Z', Buffer.from('I')),
            ]),
          );
          continue;
        }
        if (buf.length < 5) return;
        const type = String.fromCharCode(buf[0] as number);
        const len = buf.readInt32BE(1);
        if (buf.length < len + 1) return;
        const body = buf.subarray(5, len + 1);
        buf = buf.subarray(len + 1);
        if (type === 'X') {
          sock.end();
          return;
        }
        if (type === 'Q') {
          const q = body.toString('utf8').replace(/\0$/, '');
          queries.push(q);
          const val = Buffer.from(versionString, 'utf8');
          sock.write(
            Buffer.concat([
              msg('T', Buffer.concat([i16(1), cstr('version'), i32(0), i16(0), i32(25), i16(-1), i32(-1), i16(0)])),
              msg('D', Buffer.concat([i16(1), i32(val.length), val])),
              msg('C', cstr('SELECT 1')),
              msg('Z', Buffer.from('I')),
            ]),
          );
        }
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : 0,
    queries,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

export const COCKROACH_VERSION =
  'CockroachDB CCL v24.3.1 (x86_64-pc-linux-gnu, built 2024/12/12 00:00:00, go1.22.8 X:nocoverageredesign)';
