/** Cheap Docker engine probe (GET /_ping, 1 s timeout) before importing testcontainers, which can hang on a dead socket. */
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { homedir } from 'node:os';

export function dockerAvailable(): Promise<boolean> {
  const host = process.env.DOCKER_HOST;
  let target: { socketPath?: string; host?: string; port?: number } | undefined;
  if (host?.startsWith('unix://')) target = { socketPath: host.slice('unix://'.length) };
  else if (host?.startsWith('tcp://')) {
    const u = new URL(host.replace('tcp://', 'http://'));
    target = { host: u.hostname, port: Number(u.port || 2375) };
  } else {
    const sock = [
      '/var/run/docker.sock',
      `${process.env.XDG_RUNTIME_DIR ?? ''}/docker.sock`,
      `${homedir()}/.docker/run/docker.sock`,
    ].find((p) => p.startsWith('/') && existsSync(p));
    if (sock) target = { socketPath: sock };
  }
  if (!target) return Promise.resolve(false);
  return new Promise((resolve) => {
    const req = request({ ...target, path: '/_ping', method: 'GET', timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}
