/**
 * A fleet of real gatehouse processes (`gatehouse serve all|worker`) on one database,
 * for tests that kill and restart them: fixed ports per web slot (a restarted process comes back
 * on the same address, as behind a load balancer), every stdout line kept with the process that
 * wrote it, and SIGKILL bookkeeping.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { freePort, TEST_SECRET } from './apps.ts';
import { CLI } from './cli.ts';

export interface Proc {
  /** `web0`, `worker2`, … plus a generation number: `worker2#1` is the first restart. */
  name: string;
  role: 'web' | 'worker';
  child: ChildProcess;
  /** Parsed JSON log lines (stdout), in order. */
  lines: Array<Record<string, unknown>>;
  stderr: string;
  killed: boolean;
  exited: Promise<void>;
}

export interface WebSlot {
  publicUrl: string;
  adminUrl: string;
  publicPort: number;
  adminPort: number;
}

export interface Fleet {
  procs: Proc[];
  webs: WebSlot[];
  /** The live process of each slot. */
  web: Array<Proc | undefined>;
  worker: Array<Proc | undefined>;
  startWeb(slot: number): Promise<Proc>;
  startWorker(slot: number, opts?: { wait?: boolean }): Promise<Proc>;
  /** SIGKILL, wait for the exit. */
  kill(p: Proc): Promise<void>;
  stop(): Promise<void>;
}

/** A process start takes about 1 s on an idle machine and 6–8 s on a busy shared one. */
const START_TIMEOUT_MS = 60_000;

const exitedPromise = (c: ChildProcess) =>
  new Promise<void>((res) => (c.exitCode !== null || c.signalCode !== null ? res() : c.once('exit', () => res())));

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function startFleet(o: {
  dsn: string;
  webs: number;
  workers: number;
  /** Extra environment of every process (config keys as variables). */
  env?: Record<string, string>;
  webEnv?: Record<string, string>;
  workerEnv?: Record<string, string>;
}): Promise<Fleet> {
  const webs: WebSlot[] = [];
  for (let i = 0; i < o.webs; i++) {
    const [publicPort, adminPort] = [await freePort(), await freePort()];
    webs.push({
      publicPort,
      adminPort,
      publicUrl: `http://127.0.0.1:${publicPort}`,
      adminUrl: `http://127.0.0.1:${adminPort}`,
    });
  }
  const issuer = `${webs[0]?.publicUrl}/`;
  const procs: Proc[] = [];
  const generations = new Map<string, number>();
  const base = {
    PATH: process.env.PATH ?? '',
    DSN: o.dsn,
    SECRETS_SYSTEM: TEST_SECRET,
    DEV: 'true',
    URLS_SELF_ISSUER: issuer,
    ...o.env,
  };

  function spawnProc(role: 'web' | 'worker', slot: number, args: string[], env: Record<string, string>): Proc {
    const key = `${role}${slot}`;
    const gen = generations.get(key) ?? 0;
    generations.set(key, gen + 1);
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const p: Proc = {
      name: gen ? `${key}#${gen}` : key,
      role,
      child,
      lines: [],
      stderr: '',
      killed: false,
      exited: exitedPromise(child),
    };
    let buf = '';
    child.stdout?.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          p.lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          p.lines.push({ msg: line });
        }
        nl = buf.indexOf('\n');
      }
    });
    child.stderr?.on('data', (d: Buffer) => {
      p.stderr += d.toString('utf8');
    });
    procs.push(p);
    return p;
  }

  const fleet: Fleet = {
    procs,
    webs,
    web: [],
    worker: [],
    async startWeb(slot) {
      const w = webs[slot] as WebSlot;
      const p = spawnProc('web', slot, ['serve', 'all'], {
        ...base,
        LOG_LEVEL: 'warn',
        SERVE_PUBLIC_PORT: String(w.publicPort),
        SERVE_ADMIN_PORT: String(w.adminPort),
        SERVE_PUBLIC_HOST: '127.0.0.1',
        SERVE_ADMIN_HOST: '127.0.0.1',
        URLS_SELF_ADMIN: `${w.adminUrl}/`,
        WORKER_IN_PROCESS: 'off',
        ...o.webEnv,
      });
      fleet.web[slot] = p;
      await waitFor(
        async () => {
          if (p.child.exitCode !== null) throw new Error(`${p.name} exited: ${p.stderr}`);
          try {
            return (await fetch(`${w.adminUrl}/health/ready`)).status === 200;
          } catch {
            return false;
          }
        },
        `${p.name} to be ready`,
        START_TIMEOUT_MS,
      );
      return p;
    },
    async startWorker(slot, opts = {}) {
      const p = spawnProc('worker', slot, ['worker'], {
        ...base,
        LOG_LEVEL: 'info',
        WORKER_POLL_INTERVAL: '200ms',
        WORKER_LIVENESS_CHECK_INTERVAL: '300ms',
        ...o.workerEnv,
      });
      fleet.worker[slot] = p;
      if (opts.wait !== false) {
        await waitFor(
          () => {
            if (p.child.exitCode !== null) throw new Error(`${p.name} exited: ${p.stderr}`);
            return p.lines.some((l) => l.msg === 'worker started');
          },
          `${p.name} to start`,
          START_TIMEOUT_MS,
        );
      }
      return p;
    },
    async kill(p) {
      p.killed = true;
      p.child.kill('SIGKILL');
      await p.exited;
    },
    async stop() {
      await Promise.all(
        procs.map(async (p) => {
          if (p.child.exitCode !== null || p.child.signalCode !== null) return;
          p.child.kill('SIGTERM');
          await Promise.race([p.exited, new Promise((r) => setTimeout(r, 5000))]);
          if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
        }),
      );
    },
  };
  return fleet;
}

/** A small seeded PRNG (mulberry32): random moments that a failing run can report and repeat. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
