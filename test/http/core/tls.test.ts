/**
 * `gatehouse serve all` started with a Hydra 26 config file: TLS on both listeners (the shared
 * `serve.tls` from files for public, a `serve.admin.tls` override inline for admin), one warning per
 * Hydra key that is not implemented, and a new certificate picked up on SIGHUP.
 */
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { selfSigned, type TlsPair } from '../../helpers/tls.ts';

const FIXTURE = resolve(import.meta.dirname, '../../fixtures/config/hydra-26.yml');

/** GET over TLS trusting only `ca`; answers the status, body and the certificate the server presented. */
function get(port: number, path: string, ca: string[]) {
  return new Promise<{ status: number; body: string; fingerprint: string }>((res, rej) => {
    const req = request(
      { host: '127.0.0.1', port, path, ca, servername: 'localhost', agent: false, timeout: 5_000 },
      (r) => {
        let body = '';
        r.on('data', (d) => (body += d));
        r.on('end', () => {
          const peer = (r.socket as import('node:tls').TLSSocket).getPeerCertificate();
          res({ status: r.statusCode ?? 0, body, fingerprint: peer.fingerprint256 });
        });
      },
    );
    req.on('error', rej);
    req.end();
  });
}

const fingerprint = (p: TlsPair) => new X509Certificate(p.cert).fingerprint256;

describe('serve all with a Hydra 26 config: TLS on both listeners', () => {
  let database: TestDatabase;
  let dir: string;
  beforeAll(async () => {
    database = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'gh-tls-'));
  });
  afterAll(async () => {
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves https on both, warns per unimplemented Hydra key, and reloads the certificate on SIGHUP', {
    timeout: 120_000,
  }, async () => {
    const shared = selfSigned('localhost');
    const admin = selfSigned('localhost');
    writeFileSync(join(dir, 'cert.pem'), shared.cert);
    writeFileSync(join(dir, 'key.pem'), shared.key);
    const file = join(dir, 'hydra.yml');
    writeFileSync(
      file,
      readFileSync(FIXTURE, 'utf8')
        .replace('__DSN__', database.url)
        .replace('__CERT__', join(dir, 'cert.pem'))
        .replace('__KEY__', join(dir, 'key.pem'))
        .replace('__CERT_B64__', Buffer.from(admin.cert).toString('base64'))
        .replace('__KEY_B64__', Buffer.from(admin.key).toString('base64')),
    );
    const child = spawn(process.execPath, [CLI, 'serve', 'all', '--config', file], {
      // The example's OpenTelemetry tracing stays off here: this test is about TLS and warnings.
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', TRACING_PROVIDER: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const exit = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 110_000);
    const waitFor = async (re: RegExp, text: () => string) => {
      for (let i = 0; i < 1200 && !re.test(text()); i++) await new Promise((r) => setTimeout(r, 50));
      if (!re.test(text())) throw new Error(`no ${re} in: ${text()} ${err}`);
    };
    try {
      await waitFor(/gatehouse is serving/, () => out);
      // stdout and stderr are separate pipes: the summary on stderr may arrive after the log line.
      await waitFor(/gatehouse: worker /, () => err);
      const line = JSON.parse(out.split('\n').find((l) => l.includes('gatehouse is serving')) as string);
      // The start summary names https URLs.
      expect(err).toContain(`gatehouse: public API on https://127.0.0.1:${line.public}`);
      expect(err).toContain(`gatehouse: admin API on https://127.0.0.1:${line.admin}`);
      // One warning line per Hydra key that is not implemented; no error.
      const warnings = err.split('\n').filter((l) => l.startsWith('config warning: '));
      expect(warnings).toHaveLength(6);
      expect(warnings).toContain(
        `config warning: sqa.opt_out (from ${file}) is a Hydra setting that gatehouse does not implement; ignored`,
      );
      expect(warnings).toContain(
        `config warning: log.redaction_text (from ${file}) is a Hydra setting that gatehouse does not implement; ignored`,
      );
      expect(warnings).toContain(
        `config warning: serve.tls.allow_termination_from (from ${file}) is a Hydra setting that gatehouse does not implement; ignored`,
      );

      const pub = await get(line.public, '/health/ready', [shared.cert]);
      expect(pub).toMatchObject({ status: 200, fingerprint: fingerprint(shared) });
      const adm = await get(line.admin, '/health/ready', [admin.cert]);
      expect(adm).toMatchObject({ status: 200, fingerprint: fingerprint(admin) });
      // A client that does not trust the certificate is refused (it really is TLS with this cert).
      await expect(get(line.public, '/health/ready', [admin.cert])).rejects.toThrow();

      // Renewal: new files, SIGHUP, new connections get the new certificate.
      const renewed = selfSigned('localhost');
      writeFileSync(join(dir, 'cert.pem'), renewed.cert);
      writeFileSync(join(dir, 'key.pem'), renewed.key);
      child.kill('SIGHUP');
      await waitFor(/TLS certificate reloaded/, () => out);
      expect(await get(line.public, '/health/alive', [renewed.cert])).toMatchObject({
        status: 200,
        fingerprint: fingerprint(renewed),
      });
      // The admin listener's inline certificate stays.
      expect((await get(line.admin, '/health/alive', [admin.cert])).fingerprint).toBe(fingerprint(admin));

      // A broken renewal keeps the previous certificate and logs why.
      writeFileSync(join(dir, 'key.pem'), 'not a key');
      child.kill('SIGHUP');
      await waitFor(/TLS certificate not reloaded/, () => out);
      expect(out).toMatch(/serve\.tls\.cert\.path \/ serve\.tls\.key\.path: not a usable certificate and private key/);
      expect(out).not.toContain('not a key');
      expect((await get(line.public, '/health/alive', [renewed.cert])).fingerprint).toBe(fingerprint(renewed));

      child.kill('SIGTERM');
      expect(await exit).toBe(0);
    } finally {
      clearTimeout(killer);
      child.kill('SIGKILL');
    }
  });

  it('refuses to start on an unreadable certificate with one line naming the key', { timeout: 120_000 }, async () => {
    const { runCli } = await import('../../helpers/cli.ts');
    const r = await runCli(['serve', 'all'], {
      DSN: database.url,
      SECRETS_SYSTEM: 'a-long-enough-system-secret',
      SERVE_PUBLIC_PORT: '0',
      SERVE_ADMIN_PORT: '0',
      SERVE_TLS_CERT_PATH: join(dir, 'missing.pem'),
      SERVE_TLS_KEY_PATH: join(dir, 'missing-key.pem'),
    });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(`config error: serve.tls.cert.path: cannot read ${join(dir, 'missing.pem')} (ENOENT)`);
  });
});
