/** The configuration of commands that open the application (loaded lazily by their actions). */
import { randomBytes } from 'node:crypto';
import { type Config, loadConfig } from '../config.ts';
import type { GlobalFlags } from './common.ts';

export function configFrom(flags: GlobalFlags): Config {
  return loadConfig({ file: flags.config, ...(flags.dev ? { overrides: { dev: true } } : {}) });
}

/**
 * For commands that seal nothing (`migrate`, `janitor`; Hydra runs them with a DSN alone): without
 * `secrets.system`, a random secret that lives only in this process stands in, so that the
 * container neither refuses to start nor writes a development secret to disk.
 */
export function withEphemeralSecret(config: Config): Config {
  if (config.secrets.system.length) return config;
  return { ...config, secrets: { ...config.secrets, system: [randomBytes(32).toString('base64url')] } };
}
