/** A self-signed certificate for a loopback https server (openssl is on every Debian machine). */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TlsPair {
  key: string;
  cert: string;
}

export function selfSigned(hostname: string): TlsPair {
  const dir = mkdtempSync(join(tmpdir(), 'gh-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${hostname}`,
        '-addext',
        `subjectAltName=DNS:${hostname}`,
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startHttpsServer(
  pair: TlsPair,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ port: number; server: Server; close(): Promise<void> }> {
  const server = createServer({ key: pair.key, cert: pair.cert }, handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = server.address();
  return {
    port: typeof a === 'object' && a ? a.port : 0,
    server,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
