/**
 * TLS of the public and admin listeners, configured like Hydra's: `serve.tls` for both, and
 * `serve.public.tls` / `serve.admin.tls` overriding it per listener (the certificate and the key
 * each as a whole: a listener's `cert.path` or `cert.base64` replaces the shared certificate). A
 * certificate and key come from a PEM file (`path`, re-read on reload) or inline (`base64` of the
 * PEM). Errors name the config key, never the key material.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { ConfigError } from '../config/errors.ts';
import type { RawConfig } from '../config/schema.ts';

export type ListenerName = 'public' | 'admin';

interface Source {
  /** The config key that set it, for messages. */
  key: string;
  path?: string;
  base64?: string;
}

export interface TlsSettings {
  cert: Source;
  key: Source;
}

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

type TlsBlock = RawConfig['serve']['tls'];

function source(block: TlsBlock, prefix: string, part: 'cert' | 'key'): Source | undefined {
  const { path, base64 } = block[part];
  if (path && base64) {
    throw new ConfigError([`${prefix}.${part}: set either path or base64, not both`]);
  }
  if (path) return { key: `${prefix}.${part}.path`, path };
  if (base64) return { key: `${prefix}.${part}.base64`, base64 };
  return undefined;
}

/**
 * The TLS settings of one listener, or undefined for plain HTTP.
 * @throws ConfigError when only one of certificate and key is set, or TLS is enabled without them
 */
export function listenerTls(c: Pick<RawConfig, 'serve'>, which: ListenerName): TlsSettings | undefined {
  const shared = c.serve.tls;
  const own = c.serve[which].tls;
  const enabled = own.enabled ?? shared.enabled;
  if (enabled === false) return undefined;
  const cert = source(own, `serve.${which}.tls`, 'cert') ?? source(shared, 'serve.tls', 'cert');
  const key = source(own, `serve.${which}.tls`, 'key') ?? source(shared, 'serve.tls', 'key');
  if (!cert && !key) {
    if (enabled) {
      throw new ConfigError([
        `serve.${which}.tls: TLS is enabled but no certificate and key are set (cert.path or cert.base64, key.path or key.base64)`,
      ]);
    }
    return undefined;
  }
  if (!cert) throw new ConfigError([`serve.${which}.tls: a key is set (${key?.key}) but no certificate`]);
  if (!key) throw new ConfigError([`serve.${which}.tls: a certificate is set (${cert.key}) but no key`]);
  return { cert, key };
}

function read(s: Source): Buffer {
  if (s.path !== undefined) {
    try {
      return readFileSync(s.path);
    } catch (e) {
      throw new ConfigError([`${s.key}: cannot read ${s.path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`]);
    }
  }
  const b = Buffer.from((s.base64 ?? '').replace(/\s+/g, ''), 'base64');
  if (!b.includes('-----BEGIN')) throw new ConfigError([`${s.key}: not the base64 of a PEM document`]);
  return b;
}

/**
 * Reads (or decodes) the certificate and key and checks that they form a usable pair.
 * @throws ConfigError naming the key that is unreadable or the pair that does not match
 */
export function loadTlsMaterial(t: TlsSettings): TlsMaterial {
  const m = { cert: read(t.cert), key: read(t.key) };
  try {
    createSecureContext(m);
  } catch (e) {
    const why = (e as Error).message.replace(/^error:[0-9A-F]+:/i, '').split('\n')[0];
    throw new ConfigError([`${t.cert.key} / ${t.key.key}: not a usable certificate and private key (${why})`]);
  }
  return m;
}
