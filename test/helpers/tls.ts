/**
 * Certificates for loopback https servers and TLS clients (openssl is on every Debian machine): a
 * self-signed one, and a test CA with the certificates it issues.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TlsPair {
  key: string;
  cert: string;
}

/** A self-signed certificate for `hostname` (its SAN); `subject` (openssl's `/CN=…` form) defaults to `/CN=<hostname>`. */
export function selfSigned(hostname: string, subject = `/CN=${hostname}`): TlsPair {
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
        subject,
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

const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });

/** A certificate authority of a test: its key and self-signed CA certificate. */
export function testCa(name = 'Gatehouse Test CA'): TlsPair {
  const dir = mkdtempSync(join(tmpdir(), 'gh-ca-'));
  try {
    openssl([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ]);
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A certificate `ca` issues: `subject` in openssl's `/C=…/O=…/CN=…` form, `san` as openssl's
 * subjectAltName value (`DNS:a.example,IP:127.0.0.1`), `usage` its extended key usage.
 */
export function issuedBy(ca: TlsPair, subject: string, san: string, usage: 'clientAuth' | 'serverAuth'): TlsPair {
  const dir = mkdtempSync(join(tmpdir(), 'gh-cert-'));
  const f = (n: string) => join(dir, n);
  try {
    writeFileSync(f('ca.pem'), ca.cert);
    writeFileSync(f('ca.key'), ca.key);
    writeFileSync(f('ext.cnf'), `subjectAltName=${san}\nextendedKeyUsage=${usage}\nbasicConstraints=CA:FALSE\n`);
    openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', f('key.pem')]);
    openssl(['req', '-new', '-key', f('key.pem'), '-subj', subject, '-out', f('req.csr')]);
    openssl([
      'x509',
      '-req',
      '-in',
      f('req.csr'),
      '-CA',
      f('ca.pem'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      f('ext.cnf'),
      '-out',
      f('cert.pem'),
    ]);
    return { key: readFileSync(f('key.pem'), 'utf8'), cert: readFileSync(f('cert.pem'), 'utf8') };
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
