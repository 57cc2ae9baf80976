import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../../helpers/apps.ts';
import { CLI } from '../../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

interface Proc {
  ports: Promise<{ public: number; admin: number }>;
  exit: Promise<number | null>;
  kill(sig: NodeJS.Signals): void;
  output(): string;
}

function serveAll(env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [CLI, 'serve', 'all'], {
    env: {
      PATH: process.env.PATH ?? '',
      SERVE_PUBLIC_PORT: '0',
      SERVE_ADMIN_PORT: '0',
      SERVE_PUBLIC_HOST: '127.0.0.1',
      SERVE_ADMIN_HOST: '127.0.0.1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const ports = new Promise<{ public: number; admin: number }>((res, rej) => {
    child.stdout.on('data', (d) => {
      out += d;
      for (const line of out.split('\n')) {
        if (line.includes('gatehouse is serving')) {
          const j = JSON.parse(line);
          res({ public: j.public, admin: j.admin });
        }
      }
    });
    child.on('exit', () => rej(new Error(`serve exited early: ${out}`)));
  });
  child.stderr.on('data', (d) => (out += d));
  const exit = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { ports, exit, kill: (s) => child.kill(s), output: () => out };
}

describe('gatehouse serve all', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => database.drop());

  it('serves health on both listeners and shuts down gracefully on SIGTERM', async () => {
    const p = serveAll({ DSN: database.url, SECRETS_SYSTEM: TEST_SECRET });
    const ports = await p.ports;
    for (const port of [ports.public, ports.admin]) {
      const r = await fetch(`http://127.0.0.1:${port}/health/ready`);
      expect(r.status).toBe(200);
    }
    p.kill('SIGTERM');
    expect(await p.exit).toBe(0);
    expect(p.output()).toContain('shutting down');
  });

  it('with dsn=memory starts an embedded PostgreSQL, migrates it, generates a dev secret with a warning and runs a worker', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-mem-'));
    chmodSync(dir, 0o755); // reachable by the postgres user when the suite runs as root
    try {
      const p = serveAll({ DSN: 'memory', DB_MEMORY_DIR: join(dir, 'data') });
      const ports = await p.ports;
      const r = await fetch(`http://127.0.0.1:${ports.public}/health/ready`);
      expect(r.status).toBe(200);
      expect(p.output()).toMatch(/generated development secret/);
      expect(p.output()).toMatch(/"worker":"in-process"/);
      // The development login app is on with dsn: memory, loudly.
      expect(p.output()).toMatch(/DEVELOPMENT LOGIN APP IS ON: .*never use it in production/);
      const login = await fetch(`http://127.0.0.1:${ports.public}/dev/login`);
      expect(login.status).toBe(400);
      expect(login.headers.get('content-security-policy')).toContain("default-src 'none'");
      p.kill('SIGTERM');
      expect(await p.exit).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses the development login app with a PostgreSQL dsn unless dev is also set', async () => {
    const { runCli } = await import('../../helpers/cli.ts');
    const r = await runCli(['serve', 'all'], {
      DSN: database.url,
      SECRETS_SYSTEM: TEST_SECRET,
      DEV_UI_ENABLED: 'true',
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/dev_ui\.enabled: .*refused with a dsn other than memory unless dev: true/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses serve public with dsn=memory', async () => {
    const { runCli } = await import('../../helpers/cli.ts');
    const r = await runCli(['serve', 'public'], { DSN: 'memory' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot use dsn=memory/);
  });
});
